"""The workspace schema: ``tropo.toml`` (or ``.vivary/workspace.toml``), packs, overlays.

Composition follows vivary-tropo 0.5.x: packs merge left to right, then the root file;
nested ``tropo.toml`` overlays may only tighten. Files are read through a ``reader``
callable so the same code composes the schema of the working tree, the index or any
revision.
"""

from __future__ import annotations

import copy
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from tropo.check import fields as specs
from tropo.check.roots import CONFIG_NAME as CONFIG_NAME
from tropo.check.roots import THIN_CONFIG as THIN_CONFIG
from tropo.check.roots import ConfigError as ConfigError
from tropo.check.roots import find_root as find_root

THIN_CONTRACT = "thin-v0.3"
DERIVED_SPECS = {"id": "slug", "slug": "slug", "title": "string", "created": "date", "updated": "date"}
DEFAULT_EXCLUDE = (".git", ".tropo", ".claude", "node_modules", ".obsidian")
BUNDLED_PACKS = ("coordination", "dev-project", "evals", "repo-graph")

Reader = Callable[[str], bytes | None]  # workspace-relative posix path -> bytes, None if absent


@dataclass
class TypeSpec:
    folders: list[str]
    required: dict[str, str]
    optional: dict[str, str]


@dataclass
class Config:
    """The effective schema for one directory of the workspace."""

    derive: list[str]
    base_required: dict[str, str]
    base_optional: dict[str, str]
    allow_untyped: bool
    strict: bool
    types: dict[str, TypeSpec]
    exclude: list[str]
    by_basename: dict[str, str] = field(default_factory=dict)
    by_path: dict[str, str] = field(default_factory=dict)  # exact workspace-relative dirs

    def fields_for(self, type_name: str | None) -> tuple[dict[str, str], dict[str, str]]:
        """(required, known) field specs for a document of this type."""
        required = dict(self.base_required)
        known = dict(self.base_optional)
        known.update(required)
        for name in self.derive:
            known[name] = DERIVED_SPECS.get(name, "any")
        spec = self.types.get(type_name) if type_name else None
        if spec is not None:
            required.update(spec.required)
            known.update(spec.required)
            known.update(spec.optional)
        return required, known

    def type_for(self, rel_dir: str, root_name: str) -> str | None:
        """The type of a document in ``rel_dir``: the nearest ancestor folder a type
        declares, exact relative paths before basenames, the root itself included."""
        parts = rel_dir.split("/") if rel_dir else []
        by_path, by_basename = self.by_path, self.by_basename
        for depth in range(len(parts), -1, -1):
            if by_path:  # most schemas name none: no path to join per level
                here = "/".join(parts[:depth]) or "."
                if here in by_path:
                    return by_path[here]
            name = parts[depth - 1] if depth else root_name
            if name in by_basename:
                return by_basename[name]
        return None


def _loads(raw: bytes, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _pack(name: str, read: Reader) -> dict[str, Any]:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        raise ConfigError(f"pack name {name!r} is not a plain name")
    local = f".tropo/packs/{name}.toml"
    raw = read(local)
    if raw is not None:
        return _loads(raw, local)
    if name in BUNDLED_PACKS:
        text = resources.files("tropo.packs").joinpath(f"{name}.toml").read_bytes()
        return _loads(text, f"bundled pack {name}")
    known = ", ".join(BUNDLED_PACKS)
    raise ConfigError(f"unknown pack {name!r}: not in .tropo/packs/ nor bundled ({known})")


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def _spec_table(value: Any, where: str) -> dict[str, str]:
    table = _table(value, where)
    for name, spec in table.items():
        if not isinstance(spec, str):
            raise ConfigError(f"{where}.{name} must be a field spec string, got {spec!r}")
    return table


def _merge_fields(
    required: dict[str, str], optional: dict[str, str], add_req: dict[str, str],
    add_opt: dict[str, str], owner: str,
) -> None:
    """Tighten-only merge of one required/optional pair into another."""
    for name, spec in add_req.items():
        optional.pop(name, None)  # optional -> required tightens
        if name in required and not specs.tightens(required[name], spec):
            raise ConfigError(f"{owner} field {name!r}: {spec!r} loosens {required[name]!r}")
        required[name] = spec
    for name, spec in add_opt.items():
        if name in required:
            raise ConfigError(f"{owner} field {name!r}: required->optional is a loosening")
        if name in optional and not specs.tightens(optional[name], spec):
            raise ConfigError(f"{owner} field {name!r}: {spec!r} loosens {optional[name]!r}")
        optional[name] = spec


_TIGHT_FLAGS = {"allow_untyped": False, "strict": True}  # the value that may not be undone


def _merge(base: dict[str, Any], add: dict[str, Any], where: str) -> None:
    """Compose the raw table ``add`` onto ``base`` in place, tighten-only."""
    b = base.setdefault("base", {"derive": [], "required": {}, "optional": {}})
    a = _table(add.get("base"), f"{where} [base]")
    derive = a.get("derive", [])
    if not isinstance(derive, list) or not all(isinstance(d, str) for d in derive):
        raise ConfigError(f"{where} [base] derive must be a list of field names")
    b["derive"] += [d for d in derive if d not in b["derive"]]
    _merge_fields(
        b["required"], b["optional"], _spec_table(a.get("required"), f"{where} base.required"),
        _spec_table(a.get("optional"), f"{where} base.optional"), "base",
    )
    for flag, tight in _TIGHT_FLAGS.items():
        if flag not in a:
            continue
        if not isinstance(a[flag], bool):
            raise ConfigError(f"{where} base.{flag} must be true or false")
        if b.get(flag) is tight and a[flag] is not tight:
            raise ConfigError(f"base.{flag}: {str(a[flag]).lower()} loosens an inherited "
                              f"{str(b[flag]).lower()}")
        b[flag] = a[flag]
    exclude = add.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(e, str) for e in exclude):
        raise ConfigError(f"{where} exclude must be a list of paths")
    base.setdefault("exclude", [])
    base["exclude"] += [e for e in exclude if e not in base["exclude"]]
    types = base.setdefault("types", {})
    for name, raw in _table(add.get("types"), f"{where} [types]").items():
        raw = _table(raw, f"{where} types.{name}")
        folder = raw.get("folder", name)
        folders = folder if isinstance(folder, list) else [folder]
        if not folders or not all(isinstance(f, str) and f.strip() for f in folders):
            raise ConfigError(f"{where} types.{name}.folder must be a name or a list of names")
        t = types.setdefault(name, {"folders": [], "required": {}, "optional": {}})
        t["folders"] += [f for f in folders if f not in t["folders"]]
        _merge_fields(
            t["required"], t["optional"], _spec_table(raw.get("required"), f"types.{name}.required"),
            _spec_table(raw.get("optional"), f"types.{name}.optional"), f"type {name!r}",
        )


def _build(composed: dict[str, Any]) -> Config:
    b = composed.get("base", {})
    types = {
        name: TypeSpec(list(t["folders"]), dict(t["required"]), dict(t["optional"]))
        for name, t in composed.get("types", {}).items()
    }
    cfg = Config(
        derive=list(b.get("derive", [])),
        base_required=dict(b.get("required", {})),
        base_optional=dict(b.get("optional", {})),
        allow_untyped=b.get("allow_untyped", True),
        strict=b.get("strict", True),
        types=types,
        exclude=list(DEFAULT_EXCLUDE) + [e for e in composed.get("exclude", [])
                                         if e not in DEFAULT_EXCLUDE],
    )
    for name, spec in types.items():
        for folder in spec.folders:
            exact = "/" in folder
            key = folder[2:] if folder.startswith("./") else folder.strip("/")
            table = cfg.by_path if exact else cfg.by_basename
            key = key or "."
            if table.get(key, name) != name:
                raise ConfigError(f"folder {folder!r} maps to both {table[key]!r} and {name!r}")
            table[key] = name
    return cfg


def _rel_path(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"workspace.{what} must be a non-empty relative path")
    norm = value.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm) or any(
        p in ("", ".", "..") for p in norm.rstrip("/").split("/")
    ):
        raise ConfigError(f"workspace.{what} must stay inside the workspace")
    return norm.rstrip("/")


def _check_thin(raw: dict[str, Any]) -> None:
    """The thin-v0.3 contract: what create-vivary 0.4 writes and vivary-tropo enforces."""
    w = THIN_CONFIG
    if raw.get("version") != 1 or isinstance(raw.get("version"), bool):
        raise ConfigError(f"{w}: version must be 1")
    ws = raw.get("workspace")
    if not isinstance(ws, dict):
        raise ConfigError(f"{w}: missing [workspace] metadata")
    if ws.get("contract") != THIN_CONTRACT:
        raise ConfigError(f"{w}: workspace.contract must be {THIN_CONTRACT!r}")
    if not isinstance(ws.get("preset"), str) or not ws["preset"]:
        raise ConfigError(f"{w}: workspace.preset must be a non-empty string")
    _rel_path(ws.get("state"), "state")
    protected: list[str] = []
    for what in ("private", "runtime"):
        values = ws.get(what)
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{w}: workspace.{what} must be a non-empty list")
        protected += [_rel_path(v, what) for v in values]
    adapters = ws.get("adapters")
    if not isinstance(adapters, list) or len(set(map(str, adapters))) != len(adapters) or any(
        a not in ("agents", "claude") for a in adapters
    ):
        raise ConfigError(f"{w}: workspace.adapters may contain agents and claude once each")
    caps = ws.get("capabilities", [])
    if not isinstance(caps, list) or len(set(map(str, caps))) != len(caps) or any(
        c != "cocoindex-code" for c in caps
    ):
        raise ConfigError(f"{w}: workspace.capabilities may contain cocoindex-code once")
    if "cocoindex-code" in caps:
        protected.append(".cocoindex_code")
    excludes = raw.get("exclude")
    if not isinstance(excludes, list) or not all(isinstance(e, str) for e in excludes):
        raise ConfigError(f"{w}: exclude must be a list of paths")
    have = {e.replace("\\", "/").strip("/") for e in excludes}
    missing = [p for p in protected if p not in have]
    if missing:
        raise ConfigError(f"{w}: exclude must protect private/runtime paths: {', '.join(missing)}")


def compose_root(read: Reader) -> dict[str, Any]:
    """The raw composed schema of the workspace root (packs, then the root file)."""
    thin = read(THIN_CONFIG)
    if thin is not None:
        raw = _loads(thin, THIN_CONFIG)
        _check_thin(raw)
        where = THIN_CONFIG
    else:
        plain = read(CONFIG_NAME)
        if plain is None:
            raise ConfigError(f"no {CONFIG_NAME} or {THIN_CONFIG} at the workspace root")
        raw = _loads(plain, CONFIG_NAME)
        where = CONFIG_NAME
    packs = raw.get("packs", [])
    if not isinstance(packs, list):
        raise ConfigError(f"{where}: packs must be a list of pack names")
    composed: dict[str, Any] = {}
    for name in packs:
        _merge(composed, _pack(name, read), f"pack {name!r}")
    _merge(composed, raw, where)
    if thin is not None:
        overlay = read(CONFIG_NAME)
        if overlay is not None:
            _merge(composed, _loads(overlay, CONFIG_NAME), CONFIG_NAME)
    return composed


def _rebase(raw: dict[str, Any], rel_dir: str) -> dict[str, Any]:
    """An overlay's excludes with a ``/`` are relative to the overlay's folder."""
    out = copy.deepcopy(raw)
    rebased = []
    for pattern in out.get("exclude", []) or []:
        if isinstance(pattern, str) and "/" in pattern.strip() and not pattern.startswith("/"):
            p = pattern.strip().replace("\\", "/")
            rebased.append(f"{rel_dir}/{p[2:] if p.startswith('./') else p}")
        else:
            rebased.append(pattern)
    if rebased:
        out["exclude"] = rebased
    out.pop("packs", None)  # packs in overlays are ignored, as upstream does
    return out


def root_excluder(read: Reader) -> Callable[[str], bool]:
    """What the root schema excludes, known before any overlay is: its own file and packs."""
    return excluder(_build(compose_root(read)).exclude)


class Schema:
    """The root schema plus nested overlays, resolved per directory and cached."""

    def __init__(self, read: Reader, overlay_dirs: Iterable[str]) -> None:
        self._read = read
        self._composed = compose_root(read)
        self.file = THIN_CONFIG if read(THIN_CONFIG) is not None else CONFIG_NAME  # for hints
        self.root = _build(copy.deepcopy(self._composed))
        self._overlays: list[str] = []
        self._cache: dict[str, Config] = {"": self.root}
        # Load every overlay now (a loosening is an error even where no file lives yet),
        # parents first, so an overlay in a folder its parent's schema excludes is never
        # read: excluded folders are not part of the workspace, broken configs included.
        for d in sorted({d for d in overlay_dirs if d}):
            if not self.excludes(d):
                self._overlays.append(d)
                self.for_dir(d)

    def excludes(self, rel_dir: str) -> bool:
        """Whether the schema in force above ``rel_dir`` excludes that folder."""
        return bool(rel_dir) and is_excluded(rel_dir, self.for_dir(posixpath.dirname(rel_dir)).exclude)

    def for_dir(self, rel_dir: str) -> Config:
        """The schema in force in ``rel_dir``; each folder up to the nearest one known is
        remembered on the way (19k folders may hold one document each)."""
        cache = self._cache
        cfg = cache.get(rel_dir)
        if cfg is not None:
            return cfg
        unknown = [rel_dir]
        while (cfg := cache.get(unknown[-1].rpartition("/")[0])) is None:  # "" is known
            unknown.append(unknown[-1].rpartition("/")[0])
        for here in reversed(unknown):
            if here in self._overlays:
                cfg = _build(self._composed_for(here))
            cache[here] = cfg
        return cfg

    def _composed_for(self, rel_dir: str) -> dict[str, Any]:
        composed = copy.deepcopy(self._composed)
        parts = rel_dir.split("/")
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            if here in self._overlays:
                raw = self._read(f"{here}/{CONFIG_NAME}")
                if raw is not None:
                    _merge(composed, _rebase(_loads(raw, f"{here}/{CONFIG_NAME}"), here),
                           f"{here}/{CONFIG_NAME}")
        return composed


def excluder(patterns: Iterable[str]) -> Callable[[str], bool]:
    """:func:`is_excluded` for many paths at once, at C speed: a path is excluded when one
    of its parts is a name pattern (one set test over ``rel.split("/")``) or it is, or
    lies under, a pattern with a ``/`` (one ``startswith`` over them all). Nothing is kept
    per folder: 20k documents may sit in 19k folders of their own, six to nine deep."""
    norm = [_normalize(p) for p in patterns]
    names = frozenset(p for p in norm if "/" not in p)
    paths = frozenset(p for p in norm if "/" in p)
    if not paths:
        return lambda rel: not names.isdisjoint(rel.split("/"))
    under = tuple(p + "/" for p in paths)
    return lambda rel: not names.isdisjoint(rel.split("/")) or rel in paths or rel.startswith(under)


def _normalize(pat: str) -> str:
    pat = pat.replace("\\", "/").rstrip("/")
    return pat[:-3] if pat.endswith("/**") else pat


def is_excluded(rel: str, patterns: Iterable[str]) -> bool:
    """vivary-tropo's exclude rule: exact path or prefix folder; a name without ``/``
    matches any path component; a trailing ``/**`` means the folder."""
    parts = rel.split("/")
    for pat in map(_normalize, patterns):
        if rel == pat or rel.startswith(pat + "/"):
            return True
        if "/" not in pat and pat in parts:
            return True
    return False


def unknown_specs(raw: bytes) -> list[tuple[int, str]]:
    """Each field spec of one schema file that names no spec type (a typo such as
    ``"ref-lst"``), as (line, what): a fault of the schema, so the check reports it once
    on that file (E104), not on every document that has the field. A file that does not
    parse yields none: composing the schema says why."""
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    owners: list[tuple[str, Any]] = [("base", data.get("base"))]
    types = data.get("types")
    if isinstance(types, dict):
        owners += [(f"types.{name}", table) for name, table in types.items()]
    lines = text.splitlines()
    out = []
    for owner, table in owners:
        for kind in ("required", "optional"):
            fields = table.get(kind) if isinstance(table, dict) else None
            for name, spec in (fields.items() if isinstance(fields, dict) else ()):
                if isinstance(spec, str) and not specs.is_known(spec):
                    quoted = re.compile(f"[\"']{re.escape(spec)}[\"']")
                    line = next((n for n, here in enumerate(lines, 1) if quoted.search(here)), 1)
                    out.append((line, f"{owner}.{kind}.{name}: unknown field spec {spec!r}"))
    return out
