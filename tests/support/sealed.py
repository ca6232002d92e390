"""Governed documents for the tropo tests: a sealed capsule and the gate it meets, a
document edited at a dotted path (a receipt resealed after), and seeded workspace
observations, ASCII and accented, to project into graphs."""

from __future__ import annotations

import copy
import random
from typing import Any

from tests.support import governed as b
from tropo.canonical import fingerprint
from tropo.governed.capsule import body
from tropo.governed.capsule_graph import GRAPH_CHECK

JSON = dict[str, Any]


def sealed(base: JSON, **workspace: Any) -> JSON:
    """A compiled capsule a graphless verification accepts: a repair topology
    fingerprint, and the task declaring the checks it requires."""
    capsule = copy.deepcopy(base)
    capsule["workspace"].update({"repair_topology_fingerprint": "topology_1", **workspace})
    capsule["workspace"] = {k: v for k, v in capsule["workspace"].items() if v is not ...}
    capsule["task"]["required_checks"] = copy.deepcopy(capsule["required_checks"])
    return b.seal(capsule)


CAPSULE = sealed(b.capsule())
GATE = {"name": "merge", "required_checks": [GRAPH_CHECK["name"]], "require_claims_verified": True}


def edit(doc: JSON, path: str, value: Any) -> JSON:
    """``doc`` with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    target: Any = doc
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is ...:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return doc


def resealed_receipt(receipt: JSON, path: str, value: Any) -> JSON:
    changed = edit(receipt, path, value)
    changed["fingerprint"] = fingerprint(body(changed, "receipt_id", "fingerprint"))
    return changed


NAMES = ["a", "B", "c-d", "c_d", "Zed", "zed", "x.y", "0n", "A B", "a~", "a$", "Q"]
ACCENTED = ["caf\u00e9", "Caf\u00e9", "cafe", "na\u00efve", "\u00c6r\u00f8", "stra\u00dfe", "strasse", "a\u2026b",
            "\u00a0x", "x\u00ad", "\u4e2d\u6587", "\U0001f600", "\u0142\u00f3d\u017a"]


def _facts(r: random.Random) -> JSON:
    facts: JSON = {"is_git_repository": {"status": "known", "value": r.random() < 0.9}}
    if r.random() < 0.8:
        facts["head_revision"] = {"status": "known", "value": r.choice(["abc", "def"]),
                                  "evidence": {"command": "git rev-parse HEAD"}}
    if r.random() < 0.2:
        facts["head_revision"] = {"status": "unknown", "reason": "no_head"}
    if r.random() < 0.7:
        remotes = [{"name": r.choice(["origin", "up"]), "fetch_url": r.choice(["https://x/a.git", "https://x/b.git"])}]
        facts["remotes"] = {"status": "known", "value": remotes[: r.randint(0, 1)]}
    if r.random() < 0.4:
        ref = r.choice([{"kind": "branch", "name": "main"}, {"kind": "detached"}])
        facts["head_ref"] = {"status": "known", "value": ref}
    if r.random() < 0.3:
        entries = [{"state": r.choice(["M", "??"]), "path": f"f{j}.md"} for j in range(r.randint(0, 3))]
        facts["dirty_entries"] = {"status": "known", "value": entries[::-1]}
        facts["is_dirty"] = {"status": "known", "value": True}
    if r.random() < 0.3:
        facts["git_common_dir"] = {"status": "known", "value": "/workspace/.git"}
    if r.random() < 0.3:
        facts["last_fetch"] = {"status": "known", "value": "2026-07-26T11:00:00Z"}
    if r.random() < 0.2:
        facts["workspace_markers"] = {"status": "known", "value": ["tropo.toml", "AGENTS.md"]}
    return facts


def seeded_observation(r: random.Random, index: int, pool: list[str] = NAMES) -> JSON:
    """A seeded workspace observation; every tenth index bent a known way out of shape."""
    names = r.sample(pool, r.randint(0, 7))
    refused = r.sample(["/etc", "/Etc", "/tmp/x", "rel", "/e-c", "/e_c"], r.randint(0, 4))
    observation: JSON = {
        "observed_at": "2026-07-26T12:00:00Z",
        "allowlist": ["/workspace"],
        "checkouts": [{"path": f"/workspace/{name}", "facts": _facts(r)} for name in names],
        "refusals": [{"path": path, "status": "refused", "reason": "outside_allowlist"} for path in refused],
    }
    bend = index % 10
    if bend == 1 and names:
        observation["checkouts"].append(observation["checkouts"][0])  # the same checkout twice
    elif bend == 2:
        observation["allowlist"] = ["workspace"]
    elif bend == 3 and names:
        observation["checkouts"][0]["facts"]["head_ref"] = {"status": "known", "value": {"kind": "tag"}}
    elif bend == 4:
        observation["refusals"].append({"path": "rel", "status": "refused", "reason": "resolved_outside_allowlist"})
    elif bend == 5 and names:
        observation["checkouts"][0]["path"] = "/workspace/../x"
    return observation
