"""Our collation side by side with vivary-core's (the suite's, in its own interpreter):
generated strings over every plane of Unicode, weighted to the collation domain (accents,
case, ignorables, spaces, `…`) and with CJK, emoji and lone surrogates past it, get the same
locale keys and sort in the same path order; and our table is still what Node's ICU gives."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.requirements import missing, upstream_bin
from tests.support.tropo_parity import side_by_side
from tropo.governed import collation_table
from tropo.governed.collation import Uncollatable, locale_key, path_key

DRIVER = Path(__file__).with_name("collation_driver.py")
_DOMAIN = [chr(c) for low, high in ((0x09, 0x0D), (0x20, 0x17F), (0x2000, 0x206F)) for c in range(low, high + 1)]
_NEAR = "aAáÁàâäåæbcçCdðeEéèêëiIıİĳoOøœsSßſtþyÿŸzZ \u00a0\u2007\u200b\xad\x7f-_.…,'\"0123"
_PAST = ["\u4e2d", "\u6587", "\u3042", "\U0001f600", "\U0001f469\u200d\U0001f4bb", "\ud800", "\udfff",
         "\u0391", "\u0430", "\u0300", "\U00010000", "\U000e0001", "\U0010fffd", "\uffff", "\x00", "\x1f"]


def _char(r: random.Random) -> str:
    pick = r.random()
    if pick < 0.45:
        return r.choice(_NEAR)
    if pick < 0.85:
        return r.choice(_DOMAIN)
    if pick < 0.93:
        return r.choice(_PAST)
    plane = r.randint(0, 16)
    return chr(plane * 0x10000 + r.randint(0, 0xFFFF))


def _strings() -> list[str]:
    r = random.Random(2026)
    strings = ["".join(_char(r) for _ in range(r.randint(0, 8))) for _ in range(6000)]
    within = ["".join(r.choice(_NEAR) for _ in range(r.randint(0, 5))) for _ in range(3000)]
    return [*strings, *within, *_DOMAIN, "", "a", "a\x7f", "\x7fa", "/w/caf\u00e9", "/w/cafe", "/w/Caf\u00e9",
            "M f1…", "M f10"]


def _run(python: Path | str, strings: list[str]) -> Any:
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(strings), capture_output=True,
                          text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def sides() -> tuple[Any, Any]:
    ozone = upstream_bin("ozone")
    if ozone is None:
        missing("upstream ozone not installed: run `make upstream` to compare")
    strings = _strings()
    return side_by_side(lambda: _run(sys.executable, strings), lambda: _run(ozone.parent / "python", strings))


def test_locale_keys_match_the_suite(sides: tuple[Any, Any]) -> None:
    ours, theirs = sides
    assert ours["keys"] == theirs["keys"]
    assert sum(key == "outside" for key in theirs["keys"]) >= 1000
    assert sum(key != "outside" for key in theirs["keys"]) >= 4000


def test_path_order_matches_the_suite(sides: tuple[Any, Any]) -> None:
    ours, theirs = sides
    assert ours["order"] == theirs["order"]


def test_letters_first_then_accent_and_case_position_by_position() -> None:
    """ß sorts between s and t; past the letters, an accent or capital anywhere weighs as
    one ordering within the letter's group, read from the left (so `côté` before `Cote`)."""
    words = ["cote", "Cote", "cot\u00e9", "c\u00f4te", "c\u00f4t\u00e9", "cotf", "co\u00dft"]
    assert sorted(words, key=path_key) == ["co\u00dft", "cote", "cot\u00e9", "c\u00f4te", "c\u00f4t\u00e9", "Cote",
                                           "cotf"]
    assert locale_key("a\u00ad\u200bb") == locale_key("ab")
    with pytest.raises(Uncollatable):
        locale_key("\u4e2d")


def test_the_table_is_what_nodes_icu_gives() -> None:
    node = shutil.which("node")
    if node is None:
        missing("node not installed (apt-get install nodejs): the collation table cannot be re-derived")
    proc = subprocess.run([node, str(DRIVER.with_name("collation_extract.mjs"))], capture_output=True, text=True,
                          check=True, timeout=120)
    derived = json.loads(proc.stdout)
    assert derived == {"ignored": collation_table.IGNORED, "groups": list(collation_table.GROUPS)}
