"""The execution-model block `strato mcp install` writes into a host's instructions file
(CLAUDE.md for Claude Code, AGENTS.md for Codex): without it the stratum_* tools exist,
but an agent never reaches for them. Pure functions over text: the block lives between
two markers, so writing it again replaces only it, and removing it leaves every other
byte of the file as it was."""

from __future__ import annotations

FILES = {"claude": "CLAUDE.md", "codex": "AGENTS.md"}
START = "<!-- strato:execution-model (written by `strato mcp install`; remove with --uninstall) -->"
END = "<!-- /strato:execution-model -->"

BLOCK = f"""{START}
## Stratum Execution Model

For multi-step work, use the `strato` MCP server's flows:
1. Write a `.stratum.yaml` spec: the steps, what each returns (`out`) and must hold (`ensure`).
2. Call `stratum_plan` with the spec and its input: it validates and hands out the first step.
3. Do the step, then call `stratum_step_done` with its result: the server checks the
   `ensure` rules and answers with the next step, or with why the result failed (fix, retry).
4. Call `stratum_audit` at the end and put its trace in the commit message.

Example spec:

```yaml
version: 1
contracts:
  Change: {{summary: string, tests_pass: boolean}}
flows:
  entry: fix
  fix:
    input: {{issue: string}}
    output: {{from: "${{patch.output}}", contract: Change}}
    steps:
      - id: patch
        do: "Fix ${{input.issue}} and run the tests"
        out: Change
        ensure:
          - expr: "result.tests_pass == true"
        attempts: 3
```
{END}
"""


class BlockError(Exception):
    """The file's markers are not one START before one END: we will not guess what to replace."""


def _span(text: str) -> tuple[int, int] | None:
    """Where the block is (START's first byte, one past END's line), or None."""
    starts, ends = text.count(START), text.count(END)
    if starts == ends == 0:
        return None
    begin, stop = text.find(START), text.find(END)
    if starts != 1 or ends != 1 or stop < begin:
        raise BlockError(f"the {START!r} / {END!r} markers are not one pair; fix them by hand")
    stop += len(END)
    return begin, stop + 1 if text[stop:stop + 1] == "\n" else stop


def with_block(text: str | None) -> str:
    """``text`` with the block in place: replaced where the markers are, else appended
    after a blank line."""
    text = text or ""
    span = _span(text)
    if span is not None:
        return text[: span[0]] + BLOCK + text[span[1]:]
    if not text:
        return BLOCK
    return text + ("\n" if text.endswith("\n") else "\n\n") + BLOCK


def without_block(text: str | None) -> str | None:
    """``text`` as it was before :func:`with_block` appended the block (the blank line it
    added goes too; a last line that had no newline keeps the one it was given); None
    when there is no block to remove."""
    text = text or ""
    span = _span(text)
    if span is None:
        return None
    head, tail = text[: span[0]], text[span[1]:]
    if head.endswith("\n\n"):
        head = head[:-1]
    return head + tail
