"""docs/guard.md's CI recipe, run literally in fresh clones of a bare remote: a legit
pull request passes, an attacker's (own key, force-pushed notes) fails."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

from hooks import install as installer
from strato.guard import engine, store
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    ci,
    make_key,
    origin_with_main,
    pull_request,
    run,
    ssh_sign,
)
from tests.support.repos import git


def test_recipe_passes_a_legit_pr_and_fails_an_attacker(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    remote = origin_with_main(ws, key, tmp_path)

    pull_request(ws, key, "legit", "release:1")
    git(ws.root, "push", "-q", "origin", "legit", store.REF)
    good = ci(remote, "legit", tmp_path / "ci-legit")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Guard review passed" in good.stdout and "alice@example.com" in good.stdout

    mallory = make_key(tmp_path, "ed25519", "mallory")
    own = key.signers_line("alice@example.com") + mallory.signers_line("mallory@evil")
    git(ws.root, "update-ref", "-d", store.REF)  # start the notes over, then force-push
    pull_request(ws, mallory, "attack", "release:2", {".vivary/guard/allowed_signers": own})
    git(ws.root, "push", "-q", "-f", "origin", "attack", f"+{store.REF}:{store.REF}")
    bad = ci(remote, "attack", tmp_path / "ci-attack")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "**failed**" in bad.stdout and "not an allowed signer" in bad.stdout


def test_a_contributor_who_never_pins_by_hand_passes_the_recipe(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """Guard writes through the CLI move the pin, the installed hooks check it and push the
    notes along: `git commit -a` and `git push` are all a contributor runs."""
    remote = origin_with_main(ws, key, tmp_path)
    git(ws.root, "checkout", "-q", "-b", "flow", "main")
    ws.commit({"tropo.toml": "", "NOTES.md": "n\n"}, "flow: work")
    installer.install(ws.root, ("pre-commit", "pre-push"))
    rid = "release:7"
    assert run(ws, "register", stdin={"resource_id": rid, **copy.deepcopy(POLICY)}).returncode == 0
    step = run(ws, "transition", stdin={"resource_id": rid, "from_state": "draft", "to_state": "review"})
    assert step.returncode == 0 and "now pins" in step.stderr
    ask = {"resource_id": rid, "from_state": "review", "to_state": "released", "rationale": "go"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    signed = run(ws, "override", stdin={**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})
    assert signed.returncode == 0 and json.loads(signed.stdout)["status"] == "applied", signed.stdout
    early = subprocess.run(["git", "push", "origin", "flow"], cwd=ws.root, capture_output=True, text=True,
                           check=False)
    assert early.returncode == 1 and "flow: the work tree pins notes commit" in early.stderr
    assert "git add .vivary/guard/notes-tip && git commit" in early.stderr
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/heads/flow") == ""
    git(ws.root, "commit", "-q", "-a", "-m", "flow: guard steps")  # through the pre-commit hook
    git(ws.root, "push", "-q", "origin", "flow")  # through the pre-push hook: notes travel along
    assert git(remote, "rev-parse", store.REF).strip() == git(ws.root, "rev-parse", store.REF).strip()
    good = ci(remote, "flow", tmp_path / "ci-flow")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Guard review passed" in good.stdout and "alice@example.com" in good.stdout
