"""A model's validation error as the protocol's own refusal: `invalid` naming the field, with a message
that says what to do (never pydantic's text, which names its own types and links to its docs).

A field is named as the contract names it: a job's field by its own name (`max_attempts`, not
`job.max_attempts`), a schedule's as `schedule.cron`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from cronwright.declare.job_fields import (
    IMMUTABLE,
    SCHEDULE_KINDS,
    SCHEDULE_TAGS,
    AtSpec,
    CronSpec,
    EveryMsSpec,
    EverySpec,
    ZoneSpec,
)
from cronwright.errors import ImmutableField, Invalid, Refusal

_SPECS: dict[str, type[BaseModel]] = {
    "cron": CronSpec,
    "every": EverySpec,
    "every_ms": EveryMsSpec,
    "at": AtSpec,
    "tz": ZoneSpec,
}
# The containers whose fields are named without them.
_FLAT = ("job", "changes")
_REQUIRED = {
    "job": "'job' is required: an object with name, target, action and schedule (or run_at)",
    "changes": "'changes' is required: an object with the fields to change",
}


def refusal(
    error: ValidationError,
    model: type[BaseModel],
    where: str,
    rename: Mapping[str, str] | None = None,
    noun: str = "field",
) -> Refusal:
    """The refusal for the first problem `error` found in a request validated with `model`.

    `where` names the request in the caller's terms (the protocol's "a `list` request", an MCP tool's
    name), and `noun` what its fields are called there (an MCP tool's are arguments); `rename` maps a
    field's protocol name to the caller's (for a field that the caller names otherwise)."""
    details = error.errors(include_url=False)
    return _refusal(details[0], model, where, rename or {}, noun)


def misspelled(error: ValidationError, model: type[BaseModel], where: str) -> Refusal | None:
    """The refusal for the first key `error` found that `model` does not have (a typo, named with the key
    meant), or None: for a caller that checks only the spelling of a request, and leaves its values to the
    service (the config's seeds)."""
    for detail in error.errors(include_url=False):
        spelled = detail["type"] == "extra_forbidden" or (
            detail["type"] == "schedule_kind" and _strangers(detail["input"])
        )
        if spelled:
            return _refusal(detail, model, where, {}, "field")
    return None


def _refusal(
    detail: ErrorDetails, model: type[BaseModel], where: str, rename: Mapping[str, str], noun: str
) -> Refusal:
    raw = [str(part) for part in detail["loc"]]
    loc = _path(raw)
    kind = detail["type"]
    if kind == "extra_forbidden":
        return _unknown(loc, _tag(raw), model, where, rename, noun)
    if not loc:  # a check of the whole request (ByJob's: name or job_id)
        return Invalid(rename.get("name", "name"), str(detail["msg"]))
    leaf = _leaf(loc, rename)
    if kind == "missing":
        return Invalid(leaf, _REQUIRED.get(leaf, f"'{leaf}' is required"))
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return Invalid(leaf, f"'{leaf}' must be a JSON object, not {_kind(detail['input'])}")
    if kind == "schedule_kind":
        return Invalid(leaf, f"'{leaf}' {_strangers(detail['input'])}{detail['msg']}")
    return Invalid(leaf, f"'{leaf}' {detail['msg']}")


def _strangers(given: object) -> str:
    """What a schedule holds that no schedule may ("has an unknown key 'corn' (did you mean 'cron'?);"),
    or nothing: a typo of a key is named, never just reported as a schedule of no kind."""
    if not isinstance(given, dict):
        return ""
    known = {name for spec in _SPECS.values() for name in spec.model_fields}
    unknown = [str(key) for key in given if key not in known]
    if not unknown:
        return ""
    key = unknown[0][:50]
    meant = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f" (did you mean {meant[0]!r}?)" if meant else ""
    return f"has an unknown key {key!r}{hint}; it "


def _tag(raw: Sequence[str]) -> str | None:
    """The kind of schedule the location is in, where it is in one."""
    for index in range(1, len(raw) - 1):
        if raw[index - 1] == "schedule" and raw[index] in SCHEDULE_TAGS:
            return raw[index]
    return None


def _path(raw: Sequence[str]) -> list[str]:
    """The location without the tag of the schedule union ('schedule', 'cron', 'tz' is schedule.tz)."""
    path: list[str] = []
    for index, part in enumerate(raw):
        if path and path[-1] == "schedule" and part in SCHEDULE_TAGS and index < len(raw) - 1:
            continue
        path.append(part)
    return path


def _leaf(loc: Sequence[str], rename: Mapping[str, str]) -> str:
    inner = list(loc[1:]) if len(loc) > 1 and loc[0] in _FLAT else list(loc)
    # A value inside a free-form object (args, origin) is the object's problem.
    if len(inner) > 1 and inner[0] in ("args", "origin"):
        inner = inner[:1]
    dotted = ".".join(inner)
    return rename.get(dotted, dotted)


def _unknown(
    loc: list[str], tag: str | None, model: type[BaseModel], where: str, rename: Mapping[str, str], noun: str
) -> Refusal:
    *container, key = loc
    if container == ["changes"] and key in IMMUTABLE:
        return ImmutableField(f"'{key}' cannot change; create a new job for another {key}", field=key)
    field = _leaf(loc, rename)
    if container[-1:] == ["schedule"] and key == "tz":
        return Invalid(field, "'tz' goes with 'cron' only; 'at' instants carry their own offset")
    if container[-1:] == ["schedule"]:
        known = list(_SPECS[tag].model_fields) if tag else [*SCHEDULE_KINDS, "tz"]
    else:
        known = [
            _leaf([*container, name], rename).rsplit(".", 1)[-1] for name in _fields_at(model, container)
        ]
    if container:
        where, noun = f"'{_leaf(container, rename)}'", "field"
    meant = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    listed = ", ".join(sorted(known))
    if meant:
        message = f"{where} has no {noun} '{key[:50]}'; did you mean '{meant[0]}'? Its {noun}s are: {listed}"
    else:
        message = f"{where} has no {noun} '{key[:50]}'; its {noun}s are: {listed}"
    return Invalid(field, message)


def _fields_at(model: type[BaseModel], container: Sequence[str]) -> list[str]:
    """The fields of the object at `container` (not a schedule) inside a request of `model`."""
    current: type[BaseModel] | None = model
    for part in container:
        field = current.model_fields.get(part) if current is not None else None
        current = _model_of(field.annotation) if field is not None else None
    return list(current.model_fields) if current is not None else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for inner in getattr(annotation, "__args__", ()):
        found = _model_of(inner)
        if found is not None:
            return found
    return None


def _kind(value: object) -> str:
    from cronwright.declare.types import _kind as kind

    return kind(value)
