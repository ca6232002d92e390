"""Every finding code, strictness, and check PATHS against the whole workspace."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.vaults import codes, make_vault, tropo, tropo_json


def test_clean_vault(tmp_path: Path) -> None:
    make_vault(tmp_path)
    code, out = tropo_json("check", cwd=tmp_path)
    assert (code, out["checked"], out["clean"], out["findings"]) == (0, 4, 4, [])


def test_each_upstream_code(tmp_path: Path) -> None:
    make_vault(tmp_path, {
        "people/bad-yaml.md": "---\nrelationship: [x\n---\n",
        "people/list.md": "---\n- a\n---\n",
        "people/missing.md": "---\ntags: [a]\n---\n",
        "people/empty.md": "---\nrelationship: ''\n---\n",
        "meetings/bad-values.md": "---\ndate: June\nproject: Not A Slug\nurl: ftp://x\nminutes: ten\n---\n",
        "meetings/noise.md": "---\ndate: 2026-01-01\nid: noise\ntitle: Noise Doc\n---\n# Noise Doc\n",
        "meetings/unknown.md": "---\ndate: 2026-01-01\nmood: good\n---\n",
        "meetings/broken.md": "---\ndate: 2026-01-01\nattendees: [jeff, ghost]\n---\n",
        "loose.md": "# untyped but allowed\n",
    })
    code, out = tropo_json("check", "--lenient", cwd=tmp_path)
    assert code == 1
    got = set(codes(out))
    assert got == {
        ("people/bad-yaml.md", 3, "E001"),
        ("people/list.md", 2, "E001"),
        ("people/missing.md", 1, "E101"),
        ("people/empty.md", 2, "E102"),
        ("meetings/bad-values.md", 2, "E103"),
        ("meetings/bad-values.md", 3, "E103"),
        ("meetings/bad-values.md", 3, "W220"),
        ("meetings/bad-values.md", 4, "E103"),
        ("meetings/bad-values.md", 5, "E103"),
        ("meetings/noise.md", 3, "W210"),
        ("meetings/noise.md", 4, "W210"),
        ("meetings/unknown.md", 3, "W202"),
        ("meetings/broken.md", 3, "W220"),
    }
    levels = {(f["code"], f["level"]) for f in out["findings"]}
    assert ("W220", "warning") in levels and ("E103", "error") in levels
    assert out["warnings"] == 5 and out["errors"] == 8


def test_untyped_is_w201_only_when_disallowed(tmp_path: Path) -> None:
    make_vault(tmp_path, {"loose.md": "---\nmood: x\n---\n# Loose\n"})
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 0 and out["findings"] == []  # untyped docs are not held to a schema
    conf = (tmp_path / "tropo.toml").read_text().replace("allow_untyped = true", "allow_untyped = false")
    (tmp_path / "tropo.toml").write_text(conf)
    code, out = tropo_json("check", "--lenient", cwd=tmp_path)
    assert code == 1
    assert [(f["code"], f["level"]) for f in out["findings"]] == [("W201", "error")]


def test_strict_by_default_lenient_and_quiet(tmp_path: Path) -> None:
    make_vault(tmp_path, {"meetings/unknown.md": "---\ndate: 2026-01-01\nmood: good\n---\n"})
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 1 and out["errors"] == 1 and out["warnings"] == 0
    assert out["findings"][0]["level"] == "error"
    code, out = tropo_json("check", "--lenient", cwd=tmp_path)
    assert code == 0 and out["warnings"] == 1
    code, text, _ = tropo("check", "--quiet", cwd=tmp_path)
    assert code == 1 and "W202" not in text and "1 error(s)" in text
    code, text, _ = tropo("check", cwd=tmp_path)
    assert "meetings/unknown.md:3: error W202: unknown field 'mood'" in text
    (tmp_path / "tropo.toml").write_text((tmp_path / "tropo.toml").read_text().replace(
        "allow_untyped = true", "allow_untyped = true\nstrict = false"))
    assert tropo_json("check", cwd=tmp_path)[0] == 0
    assert tropo_json("check", "--strict", cwd=tmp_path)[0] == 1


def test_duplicate_ids_are_e130_and_the_first_names_the_node(tmp_path: Path) -> None:
    make_vault(tmp_path, {"contacts/jeff.md": "---\nrelationship: friend\n---\n# Other Jeff\n"})
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 1
    assert codes(out) == [("people/jeff.md", 1, "E130")]
    assert "contacts/jeff.md has it already" in out["findings"][0]["message"]
    _, g = tropo_json("graph", cwd=tmp_path)
    assert [n["path"] for n in g["nodes"] if n["id"] == "jeff"] == ["contacts/jeff.md"]


def test_check_paths_resolves_refs_against_the_whole_workspace(tmp_path: Path) -> None:
    make_vault(tmp_path, {"meetings/broken.md": "---\ndate: 2026-01-01\nattendees: [ghost]\n---\n"})
    code, out = tropo_json("check", str(tmp_path / "meetings/2026-06-12-kickoff.md"), cwd=tmp_path)
    assert (code, out["checked"], out["findings"]) == (0, 1, [])
    code, out = tropo_json("check", str(tmp_path / "meetings"), cwd=tmp_path)
    assert code == 1 and out["checked"] == 2
    assert codes(out) == [("meetings/broken.md", 3, "W220")]


def test_path_outside_the_workspace_is_a_usage_error(tmp_path: Path) -> None:
    make_vault(tmp_path / "ws")
    code, _, err = tropo("check", str(tmp_path), cwd=tmp_path / "ws")
    assert code == 2 and "outside the workspace" in err


def test_excluded_and_default_excluded_paths(tmp_path: Path) -> None:
    make_vault(tmp_path, {"node_modules/x/a.md": "---\nbad: [\n---\n",
                          "drafts/a.md": "---\nbad: [\n---\n", ".claude/skills/s.md": "---\n- x\n---\n"})
    (tmp_path / "tropo.toml").write_text('exclude = ["drafts"]\n' + (tmp_path / "tropo.toml").read_text())
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 0 and out["checked"] == 4


def test_binary_non_utf8_and_huge_files(tmp_path: Path) -> None:
    make_vault(tmp_path)
    (tmp_path / "people" / "latin1.md").write_bytes("---\nrelationship: caf\xe9\n---\n".encode("latin-1"))
    (tmp_path / "people" / "bin.md").write_bytes(b"\x00\x01\x02binary")
    with open(tmp_path / "people" / "huge.md", "wb") as fh:
        fh.write(b"---\nrelationship: big\n---\n")
        fh.write(b"x" * (50 * 1024 * 1024))
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 1
    got = set(codes(out))
    assert ("people/latin1.md", 0, "E002") in got
    assert ("people/bin.md", 0, "E002") in got
    assert ("people/huge.md", 0, "E003") in got
    assert ("people/bin.md", 1, "E101") in got  # the rest of the check still runs


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    ws = make_vault(tmp_path / "ws")
    (tmp_path / "outside.md").write_text("---\nrelationship: x\n---\n")
    os.symlink(tmp_path / "outside.md", ws / "people" / "escape.md")
    os.symlink("../people/jeff.md", ws / "meetings" / "inside.md")
    os.symlink("loop-b.md", ws / "people" / "loop-a.md")
    os.symlink("loop-a.md", ws / "people" / "loop-b.md")
    os.symlink(ws / "people", ws / "projects" / "dirlink")
    code, out = tropo_json("check", cwd=ws)
    assert out["checked"] == 4
    assert codes(out) == [("people/escape.md", 0, "W230")]
    assert code == 1


def test_file_vanishing_mid_run_is_e000(tmp_path: Path) -> None:
    from tropo.check.workspace import open_workspace

    make_vault(tmp_path)
    ws = open_workspace(tmp_path)
    entries = ws._entries  # listed...
    (tmp_path / "people" / "jeff.md").unlink()  # ...then gone before it is read
    assert any(e.rel == "people/jeff.md" for e in entries)
    report = ws.check()
    assert [(f.path, f.code) for f in report.findings] == [
        ("meetings/2026-06-12-kickoff.md", "W220"),  # its ref to jeff now dangles
        ("people/jeff.md", "E000"),
        ("projects/tropo/README.md", "W220"),
    ]
