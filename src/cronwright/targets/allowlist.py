"""The seam between the service and the target registry: is `target.action` allowed, are its args valid?"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from cronwright.errors import ArgsInvalid, TargetNotAllowed
from cronwright.targets.plainschema import certainly_valid, is_plain_schema

if TYPE_CHECKING:
    import jsonschema


class Allowlist(Protocol):
    def check(self, target: str, action: str, args: Mapping[str, Any]) -> None:
        """Raises TargetNotAllowed for an unknown target or action, ArgsInvalid for args it refuses."""
        ...

    def describe(self) -> list[dict[str, Any]]:
        """Every allowed target with its actions and their args schemas."""
        ...


def check_args(target: str, action: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Validates args against a JSON Schema, naming the JSON path of every problem.

    A key the schema does not name is let through unless the schema itself forbids extras; then the
    problem names the key and, where one is close, the property meant.
    """
    values = dict(args)
    plain, takes_none, validator = _checker(schema)
    if plain and (certainly_valid(schema, values) if values else takes_none):
        return
    if validator is None:
        validator = _validator(schema, plain)
    problems = sorted(validator.iter_errors(values), key=lambda error: list(error.absolute_path))
    if problems:
        details = [detail for error in problems for detail in _details(error)][:20]
        summary = "; ".join(f"{d['path']}: {d['problem']}" for d in details[:3])
        raise ArgsInvalid(f"args for {target}.{action} do not match its schema: {summary}", problems=details)


# What is known of each schema, by its identity: an action's schema lives as long as its spec, and every run
# checks its args again, so finding whether it is plain (plainschema.py), and building its validator, once
# per schema (not per run) keeps that check cheap. The validator is built only for args the plain check
# could not pass: jsonschema is imported by the first of those, and never when every schema is plain and
# every args valid (a `tick` of no-arg actions). Whether a plain schema takes no args at all is found once
# too: the most common args, which every run of a no-arg action checks.
# (the schema, plain, plain and takes no args, its validator)
_Checker = tuple[Mapping[str, Any], bool, bool, "jsonschema.protocols.Validator | None"]
_CHECKERS: dict[int, _Checker] = {}
_CHECKERS_LOCK = threading.Lock()
_CHECKERS_MAX = 1024


def _checker(schema: Mapping[str, Any]) -> tuple[bool, bool, jsonschema.protocols.Validator | None]:
    """Whether `schema` is plain, whether it is plain and certainly takes no args, and its validator if
    one was built."""
    cached = _CHECKERS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = _remember(schema, is_plain_schema(schema), None)
    return cached[1], cached[2], cached[3]


def _validator(schema: Mapping[str, Any], plain: bool) -> jsonschema.protocols.Validator:
    """`schema`'s validator, remembered beside what `_checker` found of it (`plain`)."""
    import jsonschema  # here, not at the top: see plainschema.py

    validator = jsonschema.Draft202012Validator(schema)
    _remember(schema, plain, validator)
    return validator


def _remember(
    schema: Mapping[str, Any], plain: bool, validator: jsonschema.protocols.Validator | None
) -> _Checker:
    entry = (schema, plain, plain and certainly_valid(schema, {}), validator)
    with _CHECKERS_LOCK:
        if len(_CHECKERS) >= _CHECKERS_MAX:
            _CHECKERS.clear()  # specs described again after code changes: drop the old ones
        _CHECKERS[id(schema)] = entry
    return entry


def _details(error: jsonschema.ValidationError) -> list[dict[str, str]]:
    """One problem per error, but one per unknown key for an `additionalProperties: false` refusal."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return [{"path": error.json_path, "problem": error.message}]
    schema = error.schema if isinstance(error.schema, dict) else {}
    named = list(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    takes = ", ".join(named) or "no args"
    details = []
    extras = [k for k in error.instance if k not in named and not any(re.search(p, k) for p in patterns)]
    for key in sorted(extras):
        close = difflib.get_close_matches(key, named, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problem = f"unknown arg {key!r}{hint}; it takes: {takes}"
        details.append({"path": f"{error.json_path}.{key}", "problem": problem})
    return details or [{"path": error.json_path, "problem": error.message}]


class StaticAllowlist:
    """An allowlist given as a plain map {target: {action: args schema}}: for tests and embedding."""

    def __init__(self, actions: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        self._actions = actions

    def check(self, target: str, action: str, args: Mapping[str, Any]) -> None:
        schema = self._actions.get(target, {}).get(action)
        if schema is None:
            raise TargetNotAllowed(
                f"{target}.{action} is not an allowed target action; see `targets` for the list"
            )
        check_args(target, action, schema, args)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"target": target, "actions": [{"action": a, "args_schema": dict(s)} for a, s in actions.items()]}
            for target, actions in sorted(self._actions.items())
        ]
