"""The runner measures real processes and reports what it measured, ratios included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench import generate, run


def test_run_once_measures_the_process_itself(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sample = run.run_once([sys.executable, "-c", "x = bytearray(64 << 20); print('hi'); raise SystemExit(3)"],
                          tmp_path, out)
    assert sample.rc == 3 and out.read_text() == "hi\n"
    assert sample.rss >= 64 << 20 and sample.wall > 0 and sample.cpu >= 0


def _timing(wall: float, rss: int = 1 << 20) -> run.Timing:
    return run.Timing([run.Sample(w, w / 2, rss, 0) for w in (wall, wall * 3, wall * 0.9)])


def test_medians_ratios_and_verdicts() -> None:
    ours = [_timing(x) for x in (1.0, 0.5, 0.2, 0.3, 0.25, 0.25)]
    rows = [run.Row(f"r{i}", t) for i, t in enumerate(ours)]
    rows[0].upstream = rows[1].upstream = rows[2].upstream = _timing(40.0)
    result = run.SizeResult(20000, rows, _timing(0.1))
    assert ours[0].wall == 1.0 and ours[0].rss == 1 << 20
    text = run.table([result])
    assert "| 20000 | r0 | 1.000 | 0.500 | 1 | 40.0 | 20.0 | 40x | 40x | 10.0 |" in text
    verdicts = run.verdicts([result])
    assert "20k cold check >= 30x vivary-tropo: 40x — met" in verdicts
    assert "20k warm check >= 150x vivary-tropo: 200x — met" in verdicts
    assert "20k warm check < 0.4 s: 0.200 s — met" in verdicts
    rows[3].ours = _timing(0.5)
    assert "20k `--staged` after a one-file change < 0.4 s: 0.500 s — MISSED" in run.verdicts([result])


def test_compare_names_each_difference(tmp_path: Path) -> None:
    def report(path: str, *findings: tuple[str, int, str]) -> Path:
        out = tmp_path / path
        out.write_text(json.dumps({"errors": len(findings), "findings": [
            {"path": p, "line": n, "code": c} for p, n, c in findings]}))
        return out

    a = report("a", ("x.md", 3, "W220"))
    assert run.compare(a, report("b", ("x.md", 3, "W220"))).startswith("agree: verdict fails, 1")
    said = run.compare(a, report("c", ("x.md", 4, "W220")))
    assert "only ours: ('x.md', 3, 'W220')" in said and "only upstream: ('x.md', 4, 'W220')" in said
    assert "verdict ours False vs upstream True" in run.compare(a, report("d"))


def test_a_whole_size_end_to_end(tmp_path: Path) -> None:
    ws = generate.build(tmp_path / "ws", 60)
    result = run.bench_size(ws, 60, 1, 1, None, 1, 20000)
    assert [len(r.ours.samples) for r in result.rows if r.ours] == [1] * 6
    assert [r.ours.samples[0].rc for r in result.rows if r.ours] == [1, 1, 1, 1, 0, 0]
    assert all(r.note == "vivary-tropo not installed" for r in result.rows)
    assert (ws / ".git" / "vivary").is_dir()
    assert run.run_once(["git", "status", "--porcelain"], ws, tmp_path / "st").rc == 0
    assert (tmp_path / "st").read_text() == ""  # the staged edit was undone
    md = run.markdown([result], 1, "python -m bench.run --sizes 60")
    assert "### Results" in md and "| 60 | check, warm |" in md and "python -m bench.run --sizes 60" in md


def test_bad_sizes_are_a_usage_error(tmp_path: Path) -> None:
    assert run.main(["--sizes", "10", "--out", str(tmp_path / "b.md")]) == 2
    assert run.main(["--sizes", "x", "--out", str(tmp_path / "b.md")]) == 2
    assert not (tmp_path / "b.md").exists()


def test_hand_written_notes_survive_a_rerun(tmp_path: Path) -> None:
    out = tmp_path / "bench.md"
    out.write_text("# old table\n" + run.NOTES + "\n## Profile\nkept\n")
    assert run.main(["--sizes", "60", "--repeat", "1", "--workdir", str(tmp_path / "w"),
                     "--upstream-max", "0", "--out", str(out)]) == 0
    text = out.read_text()
    assert "old table" not in text and "| 60 | check, warm |" in text
    assert text.endswith(run.NOTES + "\n## Profile\nkept\n")
