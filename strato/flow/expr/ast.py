"""Expression syntax tree and the parser that builds it: precedence climbing over the
token list, with nesting and size limits checked while parsing (before any evaluation)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from strato.flow.expr.errors import ExprError
from strato.flow.expr.lexer import KEYWORDS, Token, tokenize

MAX_NESTING = 128
MAX_NODES = 4096
FORBIDDEN_MEMBERS = frozenset({"__proto__", "constructor", "prototype"})
# name -> exact arity
BUILTINS = {
    "len": 1,
    "any": 1,
    "all": 1,
    "max": 1,
    "min": 1,
    "str": 1,
    "int": 1,
    "bool": 1,
    "matches": 2,
    "file_exists": 1,
    "file_contains": 2,
}
# binary operators by precedence level, lowest first
_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"||"}),
    frozenset({"&&"}),
    frozenset({"==", "!=", "<", "<=", ">", ">=", "in"}),
    frozenset({"+", "-"}),
    frozenset({"*", "/"}),
)


@dataclass(frozen=True, slots=True)
class Lit:
    value: Any


@dataclass(frozen=True, slots=True)
class Ident:
    name: str


@dataclass(frozen=True, slots=True)
class Member:
    obj: Node
    name: str


@dataclass(frozen=True, slots=True)
class Index:
    obj: Node
    index: int


@dataclass(frozen=True, slots=True)
class Call:
    fn: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Node
    right: Node


Node = Lit | Ident | Member | Index | Call | Unary | Binary


@lru_cache(maxsize=1024)
def parse(source: str) -> Node:
    """Parse an expression (cached: specs evaluate the same strings many times)."""
    return _Parser(tokenize(source)).parse_all()


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.nodes = 0
        self.depth = 0
        self.heights: dict[int, int] = {}

    def parse_all(self) -> Node:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise ExprError("parse_error", f"unexpected {tok.text!r} at offset {tok.pos}")
        return node

    # --- token helpers
    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok.kind != "op" or tok.text != text:
            shown = tok.text or "end of expression"
            raise ExprError("parse_error", f"expected {text!r} at offset {tok.pos}, got {shown!r}")

    def make(self, node: Node, *children: Node) -> Node:
        """Count the node and enforce the nesting (tree height) and size limits."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExprError("resource_limit", f"expression has more than {MAX_NODES} nodes")
        height = 1 + max((self.heights[id(c)] for c in children), default=0)
        if height > MAX_NESTING:
            raise ExprError("resource_limit", f"expression nests deeper than {MAX_NESTING}")
        self.heights[id(node)] = height
        return node

    # --- grammar
    def expr(self, min_level: int = 0) -> Node:
        """Precedence climbing: one frame per operand keeps deep nesting within the
        Python stack while the explicit nesting limit is enforced."""
        left = self.unary()
        while (level := self.binary_level(self.peek())) is not None and level >= min_level:
            op = self.take().text
            right = self.expr(level + 1)
            left = self.make(Binary(op, left, right), left, right)
        return left

    def binary_level(self, tok: Token) -> int | None:
        if tok.kind == "op" or (tok.kind == "ident" and tok.text == "in"):
            for level, ops in enumerate(_LEVELS):
                if tok.text in ops:
                    return level
        return None

    def nested(self) -> Node:
        """A parenthesised expression or call argument: one nesting level deeper."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ExprError("resource_limit", f"expression nests deeper than {MAX_NESTING}")
        node = self.expr()
        self.depth -= 1
        return node

    def unary(self) -> Node:
        ops: list[str] = []
        while self.peek().kind == "op" and self.peek().text in ("!", "-"):
            ops.append(self.take().text)
            if len(ops) > MAX_NESTING:
                raise ExprError("resource_limit", f"expression nests deeper than {MAX_NESTING}")
        node = self.postfix()
        for op in reversed(ops):
            node = self.make(Unary(op, node), node)
        return node

    def postfix(self) -> Node:
        node = self.primary()
        while self.peek().kind == "op" and self.peek().text in (".", "["):
            if self.take().text == ".":
                name = self.take()
                if name.kind != "ident":
                    raise ExprError("parse_error", f"expected a member name at offset {name.pos}")
                if name.text in FORBIDDEN_MEMBERS:
                    raise ExprError("validation_error", f"member {name.text!r} is forbidden")
                node = self.make(Member(node, name.text), node)
            else:
                idx = self.take()
                if idx.kind != "num" or not isinstance(idx.value, int):
                    raise ExprError(
                        "parse_error", f"index must be a non-negative integer at offset {idx.pos}"
                    )
                self.expect("]")
                node = self.make(Index(node, idx.value), node)
        return node

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind in ("str", "num"):
            return self.make(Lit(tok.value))
        if tok.kind == "op" and tok.text == "(":
            inner = self.nested()
            self.expect(")")
            return inner
        if tok.kind == "ident":
            return self.identifier(tok)
        shown = tok.text or "end of expression"
        raise ExprError("parse_error", f"unexpected {shown!r} at offset {tok.pos}")

    def identifier(self, tok: Token) -> Node:
        if tok.text in ("true", "false"):
            return self.make(Lit(tok.text == "true"))
        if tok.text == "null":
            return self.make(Lit(None))
        if tok.text in KEYWORDS:
            raise ExprError("parse_error", f"unexpected keyword {tok.text!r} at offset {tok.pos}")
        if not (self.peek().kind == "op" and self.peek().text == "("):
            return self.make(Ident(tok.text))
        self.take()
        if tok.text not in BUILTINS:
            raise ExprError("unknown_function", f"unknown function {tok.text!r}")
        args: list[Node] = []
        if not (self.peek().kind == "op" and self.peek().text == ")"):
            args.append(self.nested())
            while self.peek().kind == "op" and self.peek().text == ",":
                self.take()
                args.append(self.nested())
        self.expect(")")
        if len(args) != BUILTINS[tok.text]:
            raise ExprError(
                "type_error",
                f"{tok.text}() takes {BUILTINS[tok.text]} argument(s), got {len(args)}",
            )
        return self.make(Call(tok.text, tuple(args)), *args)
