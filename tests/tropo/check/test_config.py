from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.repos import commit_all, write_files
from tests.support.vaults import codes, make_vault, tropo, tropo_cli, tropo_json
from tropo.check.config import ConfigError, Schema, is_excluded


def _reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda rel: files[rel].encode() if rel in files else None


def test_packs_merge_before_the_root_file() -> None:
    files = {"tropo.toml": 'packs = ["coordination", "dev-project"]\n'
                           '[types.decision]\nrequired = { owner = "string" }\n'}
    cfg = Schema(_reader(files), []).root
    assert cfg.base_optional["assignee"] == "string"
    assert set(cfg.types) == {"decision", "runbook", "spec"}
    assert cfg.types["decision"].required["owner"] == "string"
    assert cfg.by_basename["decisions"] == "decision"


def test_local_pack_shadows_bundled_and_unknown_pack_is_an_error() -> None:
    files = {"tropo.toml": 'packs = ["coordination"]\n',
             ".tropo/packs/coordination.toml": '[base.optional]\nowner = "string"\n'}
    assert "owner" in Schema(_reader(files), []).root.base_optional
    with pytest.raises(ConfigError, match="unknown pack 'nope'"):
        Schema(_reader({"tropo.toml": 'packs = ["nope"]\n'}), [])
    with pytest.raises(ConfigError, match="plain name"):
        Schema(_reader({"tropo.toml": 'packs = ["../x"]\n'}), [])


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ('[types.decision]\nrequired = { status = "enum:a|b|c|d" }\n', "loosens"),
        ('[types.decision]\noptional = { status = "enum:a" }\n', "required->optional"),
        ('[base]\nstrict = false\n', "strict: false loosens"),
        ('[base]\nallow_untyped = true\n', "allow_untyped: true loosens"),
        ('[types.decision]\nrequired = { status = "string" }\n', "loosens"),
    ],
)
def test_loosening_overlay_is_a_config_error(overlay: str, message: str) -> None:
    files = {"tropo.toml": '[base]\nallow_untyped = false\nstrict = true\n'
                           '[types.decision]\nrequired = { status = "enum:a|b|c" }\n',
             "sub/tropo.toml": overlay}
    with pytest.raises(ConfigError, match=message):
        Schema(_reader(files), ["sub"])


def test_tightening_overlay_applies_to_its_subtree_only() -> None:
    files = {"tropo.toml": '[types.decision]\nrequired = { status = "enum:a|b|c" }\n'
                           'optional = { owner = "string" }\n',
             "sub/tropo.toml": 'exclude = ["drafts/x"]\n'
                               '[types.decision]\nrequired = { status = "enum:a", owner = "string" }\n'}
    schema = Schema(_reader(files), ["sub"])
    assert schema.root.types["decision"].required == {"status": "enum:a|b|c"}
    deep = schema.for_dir("sub/decisions/more")
    assert deep.types["decision"].required == {"status": "enum:a", "owner": "string"}
    assert "owner" not in deep.types["decision"].optional
    assert "sub/drafts/x" in deep.exclude
    assert schema.for_dir("other") is schema.root


def test_folder_collision_and_exact_paths() -> None:
    with pytest.raises(ConfigError, match="maps to both"):
        Schema(_reader({"tropo.toml": '[types.a]\nfolder = "x"\n[types.b]\nfolder = ["y", "x"]\n'}), [])
    cfg = Schema(_reader({"tropo.toml": '[types.a]\nfolder = "notes"\n'
                                        '[types.b]\nfolder = "work/notes"\n'
                                        '[types.c]\nfolder = "./top"\n'}), []).root
    assert cfg.type_for("work/notes", "ws") == "b"
    assert cfg.type_for("home/notes/deep", "ws") == "a"
    assert cfg.type_for("top", "ws") == "c"
    assert cfg.type_for("x/top", "ws") is None
    assert cfg.type_for("", "notes") == "a"  # the root folder's own name counts


@pytest.mark.parametrize(
    ("text", "message"),
    [("not toml = = 1", "tropo.toml"), ("exclude = 3", "exclude"), ("[types.a]\nfolder = 3",
     "folder"), ("[types.a]\nrequired = { x = 1 }", "field spec"), ("packs = 'x'", "packs")],
)
def test_broken_config_is_one_line_and_exit_2(tmp_path: Path, text: str, message: str) -> None:
    write_files(tmp_path, {"tropo.toml": text, "a.md": "# A\n"})
    proc = tropo_cli("check", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "config error" in proc.stderr and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_config_is_exit_2(tmp_path: Path) -> None:
    proc = tropo_cli("check", cwd=tmp_path)
    assert proc.returncode == 2 and "no tropo.toml found" in proc.stderr


THIN = """\
version = 1
exclude = [".vivary/private", ".vivary/runtime", "AGENTS.md"]
[workspace]
contract = "thin-v0.3"
preset = "coding"
state = ".vivary/context.md"
private = [".vivary/private"]
runtime = [".vivary/runtime"]
adapters = ["agents"]
[types.record]
folder = ".vivary/records/record"
"""


def test_thin_workspace_config(tmp_path: Path) -> None:
    write_files(tmp_path, {".vivary/workspace.toml": THIN, "tropo.toml": 'packs = ["coordination"]\n',
                           ".vivary/records/record/first.md": "# First\n",
                           ".vivary/private/secret.md": "---\nbad: [\n---\n",
                           "AGENTS.md": "---\nx: 1\n---\n"})
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 0, out
    assert out["checked"] == 1
    code, g = tropo_json("graph", cwd=tmp_path)
    assert [n["type"] for n in g["nodes"]] == ["record"]


def test_thin_workspace_must_protect_private_paths(tmp_path: Path) -> None:
    write_files(tmp_path, {".vivary/workspace.toml": THIN.replace('".vivary/private", ', "")})
    code, _, err = tropo("check", cwd=tmp_path)
    assert code == 2 and "protect" in err


def test_nested_thin_root_conflicts(tmp_path: Path) -> None:
    write_files(tmp_path, {".vivary/workspace.toml": THIN, "sub/.vivary/workspace.toml": THIN})
    code, _, err = tropo("check", cwd=tmp_path)
    assert code == 2 and "competing" in err


def test_exclude_rules() -> None:
    assert is_excluded("docs/a.md", ["docs"])
    assert is_excluded("x/node_modules/a.md", ["node_modules"])
    assert is_excluded("a/b/c.md", ["a/b/**"])
    assert not is_excluded("docsx/a.md", ["docs"])
    assert not is_excluded("x/docs/a.md", ["x/doc"])


def test_root_found_by_walking_up(tmp_path: Path) -> None:
    make_vault(tmp_path)
    proc = tropo_cli("check", "--json", cwd=tmp_path / "people")
    assert proc.returncode == 0, proc.stderr
    assert '"checked": 4' in proc.stdout


def test_overlay_requirement_applies_in_subtree(tmp_path: Path) -> None:
    make_vault(tmp_path, {"projects/tropo/tropo.toml":
                          '[types.decision]\nrequired = { deciders = "string-list" }\n'})
    code, out = tropo_json("check", cwd=tmp_path)
    assert code == 1
    assert codes(out) == [("projects/tropo/decisions/0001-folder-as-type.md", 1, "E101")]


def test_a_config_in_an_excluded_folder_is_never_read(tmp_path: Path) -> None:
    """A broken nested ``tropo.toml`` (a template placeholder) or a competing thin root
    inside an excluded folder is not part of the workspace; outside one it still fails."""
    root = make_vault(tmp_path, {
        "tropo.toml": 'version = 1\nexclude = ["templates"]\n[base]\nallow_untyped = true\n',
        "templates/base/tropo.toml": "exclude = {{exclude}}\n",
        "templates/base/.vivary/workspace.toml": "version = 1\n",
        "lib/tropo.toml": 'exclude = ["drafts"]\n',
        "lib/drafts/tropo.toml": "not toml [\n",
        "lib/doc.md": "# doc\n",
    })
    code, out = tropo_json("check", cwd=root)
    assert code == 0 and out["findings"] == []
    (root / "tropo.toml").write_text("version = 1\n[base]\nallow_untyped = true\n")
    code, _, err = tropo("check", cwd=root)
    assert code == 2 and "templates/base" in err and "\n" not in err.strip()


def test_an_excluded_overlay_does_not_shape_the_folders_below_it() -> None:
    files = {"tropo.toml": 'exclude = ["sub/x"]\n[types.decision]\nrequired = { status = "string" }\n',
             "sub/x/tropo.toml": '[types.decision]\nrequired = { status = "enum:a" }\n'}
    schema = Schema(_reader(files), ["sub/x"])
    assert schema.excludes("sub/x") and not schema.excludes("sub")
    assert schema.for_dir("sub/x/y").types["decision"].required == {"status": "string"}


def test_a_typo_in_a_field_spec_is_one_finding_on_the_schema_file(repo_dir: Path) -> None:
    """Not one E103 per document that has the field: the schema is at fault, once (E104),
    on the file and line that declare it; an overlay's typo is reported on the overlay."""
    write_files(repo_dir, {
        "tropo.toml": 'version = 1\n[types.note]\nfolder = "notes"\n'
                      'optional = { about = "ref-lst", tags = "string-list" }\n',
        **{f"notes/n{i}.md": "---\nabout: [n1]\n---\n# N\n" for i in range(3)},
        "notes/deep/tropo.toml": '[types.note]\nrequired = { owner = "strng" }\n',
        "notes/deep/d.md": "---\nowner: me\n---\n# D\n",
    })
    commit_all(repo_dir)
    for flags in ([], [], ["--no-cache"]):
        code, out = tropo_json("check", *flags, cwd=repo_dir)
        assert code == 1 and (out["errors"], out["clean"]) == (2, 4)
        assert codes(out) == [("tropo.toml", 4, "E104"), ("notes/deep/tropo.toml", 2, "E104")]
        assert out["findings"][0]["message"].startswith(
            "types.note.optional.about: unknown field spec 'ref-lst' (known: any, bool, date,")
    text = tropo_cli("check", cwd=repo_dir).stdout
    assert text.count("E104") == 2 and "E103" not in text
    code, out = tropo_json("check", str(repo_dir / "notes/n1.md"), cwd=repo_dir)  # governed too
    assert code == 1 and codes(out) == [("tropo.toml", 4, "E104"), ("notes/deep/tropo.toml", 2, "E104")]
