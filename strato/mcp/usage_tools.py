"""`stratum_usage_report`: an outside agent's usage for one dispatch it was handed,
debited once per `dispatchId` (a repeat answers `duplicate` and changes nothing).
Stratum names no request shape for it; ours is in docs/mcp.md."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from strato.mcp.registry import Args, Context, Document, Tool, collector
from strato.runs.views import documents as views

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


class UsageReportArgs(Args):
    runId: str
    dispatchId: str = Field(description="The dispatchId of a ready entry the run handed out.")
    usage: dict[str, Any] = Field(description="{usd?, tokens?, ms?}: finite numbers >= 0.")
    telemetry: dict[str, Any] | None = Field(None, description="{durationMs, model, effort?}")


@tool("stratum_usage_report", UsageReportArgs)
def usage_report(ctx: Context, a: UsageReportArgs) -> Document:
    """Report what one dispatch cost: debited from the run's budgets once per dispatchId
    (`debited` with its seq; a repeat is `duplicate` and changes nothing), recorded in
    the run's history as a usage_debit event. Accepted for superseded dispatches and
    finished runs too: the spend was real."""
    runs = ctx.runs()
    outcome = runs.usage_report(a.runId, a.dispatchId, a.usage, a.telemetry)
    return views.usage_view(runs, outcome, a.dispatchId)
