"""The four presets: what each names its first module, change and verification."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    module: str
    module_area: str
    module_purpose: str
    change: str
    change_slice: str
    change_summary: str
    verification: str
    verification_target: str

    def values(self) -> dict[str, str]:
        """Template values; titles come from the ids."""
        return {
            "preset": self.name,
            "module": self.module,
            "module_title": _title(self.module),
            "module_area": self.module_area,
            "module_purpose": self.module_purpose,
            "change": self.change,
            "change_title": _title(self.change),
            "change_slice": self.change_slice,
            "change_summary": self.change_summary,
            "verification": self.verification,
            "verification_title": _title(self.verification),
            "verification_target": self.verification_target,
        }


def _title(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "coding",
            "codebase",
            "source code, tests and build",
            "Where the code lives, how it is built and tested, and who owns which part.",
            "local-ci-baseline",
            "local verification baseline",
            "Define the local checks (tests, lint, types) that stand in for CI while the project is young.",
            "local-checks",
            "the local checks pass on a clean checkout",
        ),
        Preset(
            "second-brain",
            "knowledge-base",
            "captured notes and their retrieval",
            "How notes are captured, named and found again.",
            "capture-routine",
            "capture routine",
            "Settle one routine for capturing a note so that it can be found a month later.",
            "retrieval-smoke",
            "a note captured last week is found in under a minute",
        ),
        Preset(
            "knowledge-work",
            "workbench",
            "sources, analyses and deliverables",
            "The sources you rely on, the analyses built on them and what you deliver.",
            "workbench-first-artifact",
            "first deliverable",
            "Produce the first deliverable with every claim traced to a source.",
            "workbench-proof",
            "every claim in the deliverable cites a source",
        ),
        Preset(
            "writing",
            "manuscript-system",
            "drafts, revisions and editorial review",
            "Where drafts live, how they are revised and how a review is recorded.",
            "draft-review-loop",
            "draft and review loop",
            "Set up the loop from draft to review to revision for one chapter.",
            "editorial-review",
            "one chapter went through a recorded editorial review",
        ),
    )
}
