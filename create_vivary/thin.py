"""The thin-v0.3 seed create-vivary 0.4.3's ``init`` lays down, rendered byte for byte.

Five files (``.gitignore``, ``.vivary/context.md``, ``.vivary/workspace.toml``,
``AGENTS.md``, ``STATE.md``), one skill per ``--adapter``, and the storage and memory
configs the options select. The texts live in ``templates/thin/``; this module only
chooses and fills them, so a plan's bytes are the bytes written. Workspaces must read
the same to either tool, which is why nothing here is ours to reword.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from create_vivary.scaffold import template_root

CONTRACT = "thin-v0.3"
# The adapter marker names the create-vivary release whose adapter format this is:
# 0.4.3's adopt replaces an adapter whose marker names an older release.
ADAPTER_FORMAT = "create-vivary 0.4.3"
ADAPTERS = {"agents": ".agents/skills/vivary/SKILL.md", "claude": ".claude/skills/vivary/SKILL.md"}
ACTIVE_CONTEXTS = ("cocoindex-code",)
STORAGES = ("auto", "file", "embedded", "cloud")
PROVIDERS = ("lancedb", "sqlite-vec", "qdrant", "astra")
MEMORIES = ("none", "local", "cognee")
SIZES = ("small", "medium", "large")
PRIVACIES = ("local", "cloud")
PRIVATE_RULES = (".vivary/private/", ".vivary/runtime/", "*.vivary-tmp")
STORAGE_CONFIG = ".vivary/storage.toml"
MEMORY_CONFIG = ".vivary/memory.toml"


class SeedError(ValueError):
    """Options the seed cannot honour (exit 1, as create-vivary 0.4.3 refuses them)."""


def _template(name: str) -> str:
    return (template_root() / "thin" / name).read_text(encoding="utf-8")


def digest(data: bytes) -> str:
    """`sha256:<hex>` of some bytes: how create-vivary 0.4.3 names a file's content."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _quoted(items: list[str]) -> str:
    return ", ".join(json.dumps(i) for i in items)


def check_options(preset: str, adapters: tuple[str, ...], active_context: str | None) -> None:
    """The refusals 0.4.3 makes before touching the target."""
    unknown = sorted(set(adapters) - set(ADAPTERS))
    if unknown:
        raise SeedError(f"unknown adapter(s): {', '.join(unknown)}; expected agents or claude")
    if len(set(adapters)) != len(adapters):
        raise SeedError("each --adapter value may be selected only once")
    if active_context is not None:
        if active_context not in ACTIVE_CONTEXTS:
            raise SeedError(f"unknown active context {active_context!r}; expected one of "
                            + ", ".join(ACTIVE_CONTEXTS))
        if preset != "coding":
            raise SeedError(f"active context {active_context!r} currently requires the coding preset")


def gitignore_block(active_context: str | None) -> str:
    rules = [*PRIVATE_RULES, *([".cocoindex_code/"] if active_context == "cocoindex-code" else [])]
    return "\n".join(["# >>> vivary private/runtime >>>", *rules, "# <<< vivary private/runtime <<<"]) + "\n"


def adapter_hashes(adapter: str) -> tuple[str, str]:
    """The source and content digests 0.4.3 uses to recognise its generated adapters."""
    source = (f"{CONTRACT}:{adapter}:route=.vivary/context.md;"
              "commands=tropo-find,tropo-check,create-vivary-doctor")
    return digest(source.encode()), digest(_template("SKILL.md").encode())


def adapter_doc(adapter: str, generator: str = ADAPTER_FORMAT) -> str:
    """One skill that routes an agent runtime to ``.vivary/context.md``; ``generator``
    is the release its marker names (an older one only to rebuild a replaced file)."""
    source_hash, content_hash = adapter_hashes(adapter)
    return (f"<!-- generated-by: {generator} -->\n<!-- adapter: {adapter} -->\n"
            f"<!-- source-hash: {source_hash} -->\n<!-- content-hash: {content_hash} -->\n"
            + _template("SKILL.md"))


def agents_block() -> str:
    """The block that routes an agent to ``.vivary/context.md``; adopt appends it to a
    person's own AGENTS.md."""
    return _template("AGENTS-block.md")


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def seed(project: str, preset: str, adapters: tuple[str, ...],
         active_context: str | None) -> dict[str, bytes]:
    """The seed's files by workspace path: the five, then one skill per adapter."""
    check_options(preset, adapters, active_context)
    excludes = [".git", ".agents", ".vivary/private", ".vivary/runtime"]
    if active_context == "cocoindex-code":
        excludes.append(".cocoindex_code")
    toml = _fill(_template("workspace.toml"), {
        "exclude": _quoted(excludes),
        "preset": preset,
        "adapters": _quoted(sorted(adapters)),
        "capabilities": _quoted([active_context] if active_context else []),
    })
    files = {
        ".gitignore": gitignore_block(active_context),
        ".vivary/context.md": _fill(_template("context.md"), {"project": project, "preset": preset}),
        ".vivary/workspace.toml": toml,
        "AGENTS.md": "# AGENTS.md\n\n" + agents_block(),
        "STATE.md": _template("STATE.md"),
    }
    for adapter in sorted(adapters):
        files[ADAPTERS[adapter]] = adapter_doc(adapter)
    return {path: text.encode("utf-8") for path, text in files.items()}


# create-vivary 0.4.3's doctor fails a memory workspace whose .gitignore lacks these,
# and its init does not write them: ours does (docs/lifecycle.md, deliberate differences).
MEMORY_RULES = ("# Vivary semantic memory: private paths its privacy check requires\n"
                "USER.md\nMEMORY.md\nmemory/*\n!memory/.gitkeep\nheartbeat-reports/*\n"
                "!heartbeat-reports/.gitkeep\n.strato/private/\n")


def with_memory_rules(current: bytes | None, memory: str) -> bytes | None:
    """The ``.gitignore`` a memory policy needs, or None when it needs no change."""
    if memory == "none" or (current is not None and MEMORY_RULES.encode() in current):
        return None
    base = current or b""
    return base + (b"" if not base or base.endswith(b"\n") else b"\n") + MEMORY_RULES.encode()


def storage_config(storage: str, provider: str) -> bytes:
    """``.vivary/storage.toml`` for a tier; a cloud provider without a template is the
    file backend, as in 0.4.3."""
    key = f"cloud-{provider}" if storage == "cloud" else storage
    name = f"storage-{key}.toml"
    if not (template_root() / "thin" / name).is_file():
        name = "storage-file.toml"
    return _template(name).encode("utf-8")


def memory_config(memory: str) -> bytes:
    return _template(f"memory-{memory}.toml").encode("utf-8")


@dataclass(frozen=True)
class Storage:
    """What the options (or the wizard's answers) chose."""

    storage: str
    provider: str
    memory: str


def auto_pick(storage: str | None, provider: str | None, privacy: str | None) -> tuple[str, str]:
    """An explicit tier wins; cloud locality means qdrant; anything else is files.
    A size hint alone never chooses a backend that needs an install."""
    if storage and storage != "auto":
        return storage, provider or "lancedb"
    if privacy == "cloud":
        return "cloud", provider or "qdrant"
    return "file", provider or "lancedb"


def config_files(choice: Storage, *, always_storage: bool) -> dict[str, bytes]:
    """The config files a choice writes: ``init`` writes storage.toml only for a tier
    other than files (``always_storage`` is ``wizard``, which always writes it)."""
    out: dict[str, bytes] = {}
    if always_storage or choice.storage != "file":
        out[STORAGE_CONFIG] = storage_config(choice.storage, choice.provider)
    if choice.memory != "none":
        out[MEMORY_CONFIG] = memory_config(choice.memory)
    return out


def project_of(root: Path) -> str:
    return root.name or "vivary-workspace"
