"""The part of Mastra's trace query predicates (``where`` of ``POST /observability/traces/query``)
we answer: what Studio's traces pages send for their filters, an agent's Traces tab included
(``entityType`` of the trace and ``entityId`` of some span of it).

In Mastra's schema (``traceQueryPredicateSchema``, @mastra/core storage):

* ``{"op": "and" | "or", "args": [...]}``, ``{"op": "not", "arg": ...}``;
* ``{"op": "eq" | "ne", "left": {"path": F} | {"literal": V}, "right": …}``, ``{"op": "in" |
  "notIn", "value": {"path": F}, "set": [V, …]}``, ``{"op": "exists" | "notExists", "path": F}``,
  over a trace's row (its root span: ``entityType``, ``entityId``, ``name``, ``status`` …);
* ``{"spans": {"some" | "none": PREDICATE}}``: some (no) span of the trace matches, each span's
  fields as Mastra's span records (``spanType``, ``entityId``, ``name`` …).

Ordering comparisons, ``includes``, nested paths (``attributes.x``) and the ``scores`` and
``feedback`` scopes are `Unsupported`: the route answers Mastra's 501 ``TRACE_QUERY_UNSUPPORTED``
naming them, as Mastra's stores without advanced queries do. A malformed predicate is a 400
naming where.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..ai_sdk import ChatRequestError

__all__ = ["Predicate", "Unsupported", "compile_where", "needs_spans"]

Row = Mapping[str, Any]
Spans = Callable[[], Sequence[Row]]
Predicate = Callable[[Row, Spans], bool]
"""``predicate(trace_row, spans)``: whether the trace matches; ``spans()`` gives its span records
(called only by a ``spans.some`` predicate: read them only when `needs_spans`)."""

_MAX_DEPTH = 16


class Unsupported(Exception):
    """A predicate this server does not evaluate (its message names it)."""


def compile_where(where: Any, at: str = "where", depth: int = 0) -> Predicate:
    """``where`` as a `Predicate` over one trace (its row and its spans)."""
    if depth > _MAX_DEPTH:
        raise ChatRequestError(f"{at}: nested more than {_MAX_DEPTH} deep", path=at)
    if not isinstance(where, Mapping):
        raise ChatRequestError(f"{at}: expected a predicate object", path=at)
    for scope in ("scores", "feedback"):
        if scope in where:
            raise Unsupported(
                f"{at}.{scope}: {scope} predicates are not supported by this server (none are kept)"
            )
    if "spans" in where:
        spans_of = where["spans"]
        if (
            not isinstance(spans_of, Mapping)
            or len(spans_of) != 1
            or next(iter(spans_of)) not in ("some", "none")
        ):
            raise ChatRequestError(f"{at}.spans: expected {{some}} or {{none}}", path=f"{at}.spans")
        quantifier, inner_where = next(iter(spans_of.items()))
        inner = _on_row(compile_where(inner_where, f"{at}.spans.{quantifier}", depth + 1))
        if quantifier == "some":
            return lambda row, spans: any(inner(span, spans) for span in spans())
        return lambda row, spans: not any(inner(span, spans) for span in spans())
    op = where.get("op")
    if op in ("and", "or"):
        args = where.get("args")
        if not isinstance(args, list):
            raise ChatRequestError(f"{at}.args: expected a list of predicates", path=f"{at}.args")
        parts = [compile_where(arg, f"{at}.args[{i}]", depth + 1) for i, arg in enumerate(args)]
        if op == "and":
            return lambda row, spans: all(p(row, spans) for p in parts)
        return lambda row, spans: any(p(row, spans) for p in parts)
    if op == "not":
        inner_not = compile_where(where.get("arg"), f"{at}.arg", depth + 1)
        return lambda row, spans: not inner_not(row, spans)
    if op in ("eq", "ne"):
        return _comparison(where, str(op), at)
    if op in ("in", "notIn"):
        return _membership(where, str(op), at)
    if op in ("exists", "notExists"):
        field = _field(where.get("path"), f"{at}.path")
        present = op == "exists"
        return lambda row, _spans: (row.get(field) is not None) == present
    raise Unsupported(f"{at}: the operator {str(op)[:40]!r} is not supported by this server")


def needs_spans(where: Any) -> bool:
    """Whether a (compiled, so well-formed) ``where`` has a ``spans.some`` predicate anywhere."""
    if not isinstance(where, Mapping):
        return False
    if "spans" in where:
        return True
    return any(needs_spans(arg) for arg in where.get("args") or []) or needs_spans(where.get("arg"))


def _on_row(predicate: Predicate) -> Predicate:
    """A predicate of a span (``spans.some``): the span is its row, with no spans of its own."""
    return lambda span, _spans: predicate(span, list)


def _field(path: Any, at: str) -> str:
    if not isinstance(path, str) or not path:
        raise ChatRequestError(f"{at}: expected a field name", path=at)
    if "." in path:
        raise Unsupported(f"{at}: nested fields ({path[:60]!r}) are not supported by this server")
    return path


def _operand(ref: Any, at: str) -> Callable[[Row], Any]:
    """``{path}`` (the row's field) or ``{literal}`` (the value itself)."""
    if isinstance(ref, Mapping) and set(ref) == {"path"}:
        field = _field(ref["path"], f"{at}.path")
        return lambda row: row.get(field)
    if isinstance(ref, Mapping) and set(ref) == {"literal"}:
        value = ref["literal"]
        return lambda _row: value
    raise ChatRequestError(f"{at}: expected {{path}} or {{literal}}", path=at)


def _comparison(where: Mapping[str, Any], op: str, at: str) -> Predicate:
    left, right = _operand(where.get("left"), f"{at}.left"), _operand(where.get("right"), f"{at}.right")
    if op == "eq":
        return lambda row, _spans: left(row) == right(row)
    return lambda row, _spans: left(row) != right(row)


def _membership(where: Mapping[str, Any], op: str, at: str) -> Predicate:
    value, choices = _operand(where.get("value"), f"{at}.value"), where.get("set")
    if not isinstance(choices, list) or not choices:
        raise ChatRequestError(f"{at}.set: expected a non-empty list of values", path=f"{at}.set")
    inside = op == "in"
    return lambda row, _spans: (value(row) in choices) == inside
