"""Template rendering: complete, safe, the same skills for both agent runtimes."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from create_vivary.presets import PRESETS
from create_vivary.scaffold import SKILL_ROOTS, TemplateError, render, template_root

DAY = dt.date(2026, 1, 2)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_renders_completely(preset: str) -> None:
    files = render(preset, "demo", today=DAY)
    p = PRESETS[preset]
    for rel in (
        "README.md",
        "AGENTS.md",
        "STATE.md",
        "SOUL.md",
        "STRATO.md",
        "USER.md",
        "MEMORY.md",
        "bug-risk-playbook.md",
        "tropo.toml",
        ".gitignore",
        "modules/index.md",
        f"modules/{p.module}/index.md",
        f"changes/{p.change}.md",
        f"verification/{p.verification}.md",
        "decisions/0001-vivary-baseline.md",
        "gates/human-gates.md",
        ".claude/skills/strato/SKILL.md",
        ".agents/skills/loops/SKILL.md",
        ".agents/skills/strato/references/self-improve.md",
    ):
        assert rel in files, rel
    for rel, data in files.items():
        assert b"{{" not in data, rel
    assert f"Preset: {preset}".encode() in files["README.md"]
    assert f"related_modules: [agent-workspace, {p.module}]".encode() in files["modules/index.md"]
    assert b"date: 2026-01-02" in files["decisions/0001-vivary-baseline.md"]
    assert b'packs = ["coordination"]' in files["tropo.toml"]


def test_both_runtimes_get_identical_skills() -> None:
    files = render("coding", "demo", today=DAY)
    claude, agents = (
        {p.removeprefix(r + "/"): d for p, d in files.items() if p.startswith(r + "/")} for r in SKILL_ROOTS
    )
    assert claude == agents
    assert {"strato/SKILL.md", "loops/SKILL.md", "strato/references/bootstrap.md"} <= set(claude)


def test_private_files_are_ignored_by_the_rendered_gitignore() -> None:
    rules = render("writing", "demo", today=DAY)[".gitignore"].decode().splitlines()
    assert {"USER.md", "MEMORY.md", ".vivary/private/"} <= set(rules)


def test_extra_excludes_reach_the_schema() -> None:
    toml = render("coding", "demo", extra_excludes=("notes/a",), today=DAY)["tropo.toml"]
    assert b'"notes/a",' in toml


@pytest.fixture
def templates_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "templates"
    shutil.copytree(template_root(), dest)
    return dest


def test_a_symlinked_template_is_refused(templates_copy: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x")
    (templates_copy / "base/leak.md").symlink_to(tmp_path / "secret")
    with pytest.raises(TemplateError, match="symlink"):
        render("coding", "demo", source=templates_copy)


def test_an_unknown_placeholder_is_refused(templates_copy: Path) -> None:
    (templates_copy / "base/extra.md").write_text("# {{nope}}\n")
    with pytest.raises(TemplateError, match="nope"):
        render("coding", "demo", source=templates_copy)


def test_a_template_path_escaping_the_target_is_refused(templates_copy: Path) -> None:
    (templates_copy / "base/{{project}}").mkdir()
    (templates_copy / "base/{{project}}/x.md").write_text("x")
    with pytest.raises(ValueError, match="escapes"):
        render("coding", "..", source=templates_copy)


def test_presets_come_from_their_data_files() -> None:
    assert sorted(PRESETS) == ["coding", "knowledge-work", "second-brain", "writing"]
    values = PRESETS["writing"].values()
    assert values["module"] == "manuscript-system"
    assert values["module_title"] == "Manuscript system"
    assert all(v for v in values.values())
