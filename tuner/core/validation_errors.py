"""A pydantic error as the one line a user can act on.

Of all the problems pydantic found, the first shown is the one the user most likely made:
an unknown key (with the closest valid name, since a misspelt key also makes a required one
"missing"), then a value they wrote, then a key they left out; among values, the one deepest in
what they wrote (of a union's members, the one that took the value's shape). Each says what to
do. A path shows the user's keys only, not the union members pydantic tried.
"""

from __future__ import annotations

import difflib
import re
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

_RANK = {"extra_forbidden": 0, "missing": 2}
_MEMBER = re.compile(r"^(bool|int|float|str|bytes|none|[a-z-]+\[.*\])$")
"""What pydantic puts in a location for the member of a plain union it tried (``int``,
``dict[...]``, ``nullable[...]``) or a dict's key (``[key]``): no key of the user's."""


def describe_validation_error(exc: ValidationError, source: str,
                              model: type[BaseModel] | None = None) -> str:
    """``source: path: what is wrong; the fix (and N more)``. ``model`` (the validated
    model) lets an unknown key name the closest valid one."""
    errors = exc.errors()
    suggestions = {_loc(e): _closest(model, e) for e in errors
                   if e["type"] == "extra_forbidden"}
    # A required key a misspelt one stands for is the same mistake, not one more.
    meant = {(*_loc(e)[:-1], s) for e in errors if (s := suggestions.get(_loc(e)))}
    errors = [e for e in errors if not (e["type"] == "missing" and _loc(e) in meant)]
    errors.sort(key=lambda e: (_RANK.get(e["type"], 1), -len(_loc(e))))
    parts = [_one(e, suggestions.get(_loc(e))) for e in errors]
    more = f" (and {len(parts) - 1} more)" if len(parts) > 1 else ""
    return f"{source}: {parts[0]}{more}"


def _loc(err: ErrorDetails) -> tuple[str | int, ...]:
    # Validators wrap a type as function-after[...], unions name the member they tried, a
    # dict's key is [key]: none is a key the user wrote. An unknown key is the user's, even one
    # named like a member (`none:`).
    loc = err["loc"]
    last = loc[-1:] if err["type"] == "extra_forbidden" else ()
    return tuple(p for p in loc[:len(loc) - len(last)] if not (isinstance(p, str) and (
        p.startswith("function-") or p == "[key]" or _MEMBER.match(p)))) + tuple(last)


def _one(err: ErrorDetails, suggestion: str | None) -> str:
    loc = _loc(err)
    path = ".".join(str(p) for p in loc) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        fix = f"did you mean `{suggestion}`?" if suggestion else "remove it or check its spelling"
        return f"{path}: unknown key; {fix}"
    if kind == "missing":
        return f"{path}: missing; add it"
    msg = err["msg"]
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
    got = err.get("input")
    shown = "" if isinstance(got, dict | list | tuple) else f" (got {_short(got)})"
    return f"{path}: {msg}{shown}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _closest(model: type[BaseModel] | None, err: ErrorDetails) -> str | None:
    loc = _loc(err)
    if model is None or not loc or not isinstance(loc[-1], str):
        return None
    names = _keys_at(model, loc[:-1])
    found = difflib.get_close_matches(loc[-1], names, n=1, cutoff=0.6)
    return found[0] if found else None


def _keys_at(tp: Any, loc: tuple[str | int, ...]) -> list[str]:
    """The keys of the model at ``loc`` inside ``tp`` (empty when the walk loses its way)."""
    for part in loc:
        tp = _step(_unwrap(tp), part)
        if tp is None:
            return []
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    return []


def _unwrap(tp: Any) -> Any:
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return tp
            tp = members[0]
        else:
            return tp


def _step(tp: Any, part: str | int) -> Any:
    origin = get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
        field = tp.model_fields.get(part)
        return None if field is None else field.annotation
    if origin in (list, tuple) and isinstance(part, int):
        return get_args(tp)[0]
    if origin is dict:
        return get_args(tp)[1]
    if origin in (Union, types.UnionType) and isinstance(part, str):
        # A discriminated union puts the tag into the location: the member it names.
        for member in get_args(tp):
            if isinstance(member, type) and issubclass(member, BaseModel) and any(
                    get_origin(f.annotation) is Literal and part in get_args(f.annotation)
                    for f in member.model_fields.values()):
                return member
    return None
