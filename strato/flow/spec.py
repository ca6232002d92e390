"""The Stratum v1 spec IR as strict pydantic models.

Everything is strict (no coercion: `"1"` is not `1`, `true` is not an integer) and
closed (`extra="forbid"`), so the structural pass of validation *is* model validation;
`strato.flow.validate` turns pydantic's errors into Stratum's codes and paths. A step is
one of six models chosen by its single construct key (`do set gate fanout run evaluate`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
STEP_ID_PATTERN = r"^[a-z][a-z0-9_-]*$"
CONSTRUCTS = ("do", "set", "gate", "fanout", "run", "evaluate")
RESERVED_KEYS = frozenset({"__proto__", "constructor", "prototype"})

Name = Annotated[str, Field(pattern=NAME_PATTERN)]
StepId = Annotated[str, Field(pattern=STEP_ID_PATTERN)]
PositiveInt = Annotated[StrictInt, Field(gt=0)]
PositiveNumber = Annotated[StrictInt | StrictFloat, Field(gt=0)]
FieldMap = dict[Name, StrictStr]
BUILTIN_AGENTS = frozenset({"claude", "codex"})


def _known_agent(value: str, info: ValidationInfo) -> str:
    """An agent the workspace defines: the validation context's `agents` (the names in
    `.vivary/agents.toml` plus the built-ins), else Stratum's own two."""
    known = (info.context or {}).get("agents", BUILTIN_AGENTS)
    if value not in known:
        names = ", ".join(sorted(known))
        raise PydanticCustomError("unknown_agent", f"unknown agent {value!r} (known: {names})")
    return value


AgentName = Annotated[StrictStr, AfterValidator(_known_agent)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class Budget(_Strict):
    usd: PositiveNumber | None = None
    tokens: PositiveInt | None = None
    dispatches: PositiveInt | None = None
    ms: PositiveInt | None = None
    # our extension (Stratum v1 specs stay valid): the most estimated tokens of context
    # one dispatch may be given; a larger prompt is refused before it is handed out
    context: PositiveInt | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> Budget:
        if all(v is None for v in (self.usd, self.tokens, self.dispatches, self.ms, self.context)):
            raise PydanticCustomError(
                "budget_empty", "budget needs at least one of usd, tokens, dispatches, ms, context"
            )
        return self


class Output(_Strict):
    from_: StrictStr = Field(alias="from")
    contract: StrictStr


class Iterate(_Strict):
    max: PositiveInt
    until: StrictStr


# --- ensure predicates: one key each


class ExprEnsure(_Strict):
    expr: StrictStr


class FileExistsEnsure(_Strict):
    file_exists: StrictStr


class FileContains(_Strict):
    path: StrictStr
    text: StrictStr


class FileContainsEnsure(_Strict):
    file_contains: FileContains


class Judged(_Strict):
    statement: StrictStr
    stakes: Literal["cheap", "default", "paranoid"]


class JudgedEnsure(_Strict):
    judged: Judged


_ENSURE_KEYS = ("expr", "file_exists", "file_contains", "judged")


def _ensure_kind(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        return next(k for k in _ENSURE_KEYS if hasattr(value, k))
    if not isinstance(value, dict):
        return None
    keys = [k for k in _ENSURE_KEYS if k in value]
    return keys[0] if len(keys) == 1 else None


Ensure = Annotated[
    Annotated[ExprEnsure, Tag("expr")]
    | Annotated[FileExistsEnsure, Tag("file_exists")]
    | Annotated[FileContainsEnsure, Tag("file_contains")]
    | Annotated[JudgedEnsure, Tag("judged")],
    Discriminator(
        _ensure_kind,
        custom_error_type="ensure_shape",
        custom_error_message=(
            "an ensure item has exactly one of expr, file_exists, file_contains, judged"
        ),
    ),
]

# --- steps


class _StepBase(_Strict):
    id: StepId
    after: list[StepId] | None = None
    when: StrictStr | None = None

    @property
    def kind(self) -> str:
        return next(c for c in CONSTRUCTS if c in type(self).model_fields)

    @property
    def deps_declared(self) -> list[str]:
        return list(self.after or [])


class DoStep(_StepBase):
    do: StrictStr
    agent: AgentName = "claude"
    out: StrictStr | None = None
    ensure: list[Ensure] | None = None
    attempts: PositiveInt | None = None
    iterate: Iterate | None = None
    budget: Budget | None = None
    on_fail: StrictStr | None = None


class SetStep(_StepBase):
    set: dict[StrictStr, StrictStr]
    out: StrictStr = Field(json_schema_extra={"required_for": "set"})
    ensure: list[Ensure] | None = None


class Gate(_Strict):
    on_approve: StrictStr | None
    on_revise: StrictStr | None
    on_kill: StrictStr | None
    max_rounds: PositiveInt | None = None


class GateStep(_StepBase):
    gate: Gate


class Stage(_Strict):
    do: StrictStr
    agent: AgentName = "claude"
    out: StrictStr | None = None
    ensure: list[Ensure] | None = None
    attempts: PositiveInt | None = None
    when: StrictStr | None = None


class Fanout(_Strict):
    over: StrictStr
    steps: Annotated[list[Stage], Field(min_length=1)]
    concurrency: PositiveInt
    isolation: Literal["worktree", "none"]
    require: Literal["all", "any"] | PositiveInt
    merge: Literal["sequential"]
    pre_merge: list[StrictStr] | None = None
    dispatch: Literal["engine", "consumer"] = "engine"


class FanoutStep(_StepBase):
    fanout: Fanout
    attempts: PositiveInt | None = None
    budget: Budget | None = None
    on_fail: StrictStr | None = None


class RunStep(_StepBase):
    run: StrictStr
    with_: dict[StrictStr, Any] = Field(alias="with")
    budget: Budget | None = None
    on_fail: StrictStr | None = None


class Evaluate(_Strict):
    command: Annotated[StrictStr, Field(min_length=1)]
    in_: Any = Field(default=None, alias="in")
    timeout_ms: PositiveInt | None = None


class EvaluateStep(_StepBase):
    evaluate: Evaluate
    out: StrictStr | None = None


STEP_MODELS: dict[str, type[_StepBase]] = {
    "do": DoStep,
    "set": SetStep,
    "gate": GateStep,
    "fanout": FanoutStep,
    "run": RunStep,
    "evaluate": EvaluateStep,
}
# every key some step kind accepts: a known key on the wrong kind is E2_FIELD_FOR_KIND
STEP_FIELDS = frozenset(
    (f.alias or name) for m in STEP_MODELS.values() for name, f in m.model_fields.items()
)


class _MixedStep(BaseModel):
    """Stands in for a step with zero or several construct keys; always fails."""

    @model_validator(mode="before")
    @classmethod
    def _refuse(cls, value: Any) -> Any:
        found = [c for c in CONSTRUCTS if isinstance(value, dict) and c in value]
        detail = f"found {', '.join(found)}" if found else "found none"
        raise PydanticCustomError(
            "E2_CONSTRUCT_MIX",
            "a step needs exactly one of do, set, gate, fanout, run, evaluate ({detail})",
            {"detail": detail},
        )


def _step_kind(value: Any) -> str | None:
    if isinstance(value, _StepBase):
        return value.kind
    if not isinstance(value, dict):
        return None
    found = [c for c in CONSTRUCTS if c in value]
    return found[0] if len(found) == 1 else "mixed"


Step = Annotated[
    Annotated[DoStep, Tag("do")]
    | Annotated[SetStep, Tag("set")]
    | Annotated[GateStep, Tag("gate")]
    | Annotated[FanoutStep, Tag("fanout")]
    | Annotated[RunStep, Tag("run")]
    | Annotated[EvaluateStep, Tag("evaluate")]
    | Annotated[_MixedStep, Tag("mixed")],
    Discriminator(
        _step_kind,
        custom_error_type="step_shape",
        custom_error_message="a step must be an object",
    ),
]
AnyStep = DoStep | SetStep | GateStep | FanoutStep | RunStep | EvaluateStep


class CarryVar(_Strict):
    initial: Annotated[StrictStr, Field(min_length=1)]
    on_revise: dict[StepId, Annotated[StrictStr, Field(min_length=1)]] | None = None


class Flow(_Strict):
    input: FieldMap
    output: Output
    steps: list[Step]
    budget: Budget | None = None
    max_rounds: PositiveInt | None = None
    carry: dict[StepId, CarryVar] | None = None

    def step(self, step_id: str) -> AnyStep | None:
        return next((s for s in self.typed_steps if s.id == step_id), None)

    @property
    def typed_steps(self) -> list[AnyStep]:
        return cast(list[AnyStep], self.steps)  # _MixedStep never validates


class Flows(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)
    __pydantic_extra__: dict[str, Flow] = Field(init=False)
    entry: StrictStr


class Spec(_Strict):
    """A validated spec. `flows` maps names to flows in document order."""

    version: StrictInt
    contracts: dict[Name, dict[Name, StrictStr]]
    flows: Flows

    @field_validator("version")
    @classmethod
    def _version_one(cls, value: int) -> int:
        if value != 1:
            raise PydanticCustomError("version", "version must be the number 1")
        return value

    @property
    def entry(self) -> str:
        return self.flows.entry

    @property
    def flow_map(self) -> dict[str, Flow]:
        return dict(self.flows.model_extra or {})

    def flow(self, name: str) -> Flow | None:
        return self.flow_map.get(name)
