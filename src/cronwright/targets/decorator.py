"""`@cronwright.action`: marks a function as an action of a python target, and the context it receives.

This module is imported by every target module and every worker, so it imports the standard library only:
no pydantic, no jsonschema, not even `cronwright.timing`. The timeout is kept as written and read by the
registry, which names the action if it is wrong.

The args schema is derived from the type hints when the function is decorated, so a bad hint fails the import
of the target module, which `cronwright check` reports:

| hint | schema |
| --- | --- |
| `str`, `int`, `float`, `bool` | `{"type": "string" \\| "integer" \\| "number" \\| "boolean"}` |
| `list[X]` | `{"type": "array", "items": X}` |
| `dict`, `dict[str, X]` | `{"type": "object", "additionalProperties": X}` |
| `Literal["a", "b"]` | `{"enum": ["a", "b"]}` |
| `X \\| None`, `Optional[X]` | `{"anyOf": [X, {"type": "null"}]}`, and not required |
| `Annotated[X, "text"]` | X, with "text" as its description |
| no hint, `Any` | `{}` (anything) |

A parameter with a default is not required, and neither is an optional (`X | None`) one, which receives None
when omitted. A parameter named `ctx`, or annotated `Context`, receives the context and is not an arg.
A key the schema does not name is refused at create (`additionalProperties: false`), since the function
could not receive it, unless the function takes `**kwargs` (semantic 27).
"""

from __future__ import annotations

import json
import logging
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, overload

MARK = "__cronwright_action__"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_F = TypeVar("_F", bound=Callable[..., Any])
_SCALARS: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class UndeclaredSecret(LookupError):
    """An action asked for a secret it did not declare in `@cronwright.action(secrets=[...])`."""


@dataclass(frozen=True, slots=True)
class ActionMark:
    """What the decorator records on the function; the worker reads it, the registry learns it via JSON."""

    name: str
    timeout: str | None
    secrets: tuple[str, ...]
    args_schema: Mapping[str, Any]
    context_param: str | None
    params: tuple[str, ...]
    nullable: tuple[str, ...]
    takes_extra: bool
    description: str

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "timeout": self.timeout,
            "secrets": list(self.secrets),
            "args_schema": self.args_schema,
            "description": self.description,
        }


class Context:
    """What a running action knows about its run. Built by the worker; tests may build one directly.

    `scheduled_for`, `fired_at` and `deadline` are aware datetimes. At `deadline` the worker is killed, so an
    action that can stop early should watch `remaining()`. `log` writes into the run's captured output.
    """

    __slots__ = (
        "_declared",
        "_secrets",
        "action",
        "attempt",
        "deadline",
        "fire_id",
        "fired_at",
        "job_id",
        "log",
        "schedule",
        "scheduled_for",
        "target",
    )

    def __init__(
        self,
        *,
        fire_id: str,
        attempt: int,
        scheduled_for: datetime,
        deadline: datetime,
        secrets: Mapping[str, str] | None = None,
        log: logging.Logger | None = None,
        fired_at: datetime | None = None,
        schedule: str = "",
        job_id: int = 0,
        target: str = "",
        action: str = "",
    ) -> None:
        for label, instant in (("scheduled_for", scheduled_for), ("deadline", deadline)):
            if instant.tzinfo is None:
                raise ValueError(f"Context.{label} must be an aware datetime")
        self.fire_id = fire_id
        self.attempt = attempt
        self.scheduled_for = scheduled_for
        self.deadline = deadline
        self.fired_at = fired_at or scheduled_for
        self.schedule = schedule
        self.job_id = job_id
        self.target = target
        self.action = action
        self.log = log or logging.getLogger(f"cronwright.action.{action or 'test'}")
        self._secrets = dict(secrets or {})
        self._declared = frozenset(self._secrets)

    def secret(self, name: str) -> str:
        """The value of a secret this action declared; UndeclaredSecret for any other name."""
        if name not in self._declared:
            raise UndeclaredSecret(
                f"secret {name!r} is not declared by this action; declare it: "
                f"@cronwright.action(secrets=[{name!r}])"
            )
        return self._secrets[name]

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once it has passed)."""
        return (self.deadline - datetime.now(UTC)).total_seconds()

    def __repr__(self) -> str:
        # Never the secrets' values: a context may well end up in a log line.
        return f"Context(fire_id={self.fire_id!r}, attempt={self.attempt}, action={self.action!r})"


@overload
def action(func: _F, /) -> _F: ...


@overload
def action(
    *, name: str | None = None, timeout: str | timedelta | None = None, secrets: Sequence[str] = ()
) -> Callable[[_F], _F]: ...


def action(
    func: _F | None = None,
    /,
    *,
    name: str | None = None,
    timeout: str | timedelta | None = None,
    secrets: Sequence[str] = (),
) -> _F | Callable[[_F], _F]:
    """Marks `func` as an action; use bare (`@cronwright.action`) or with options.

    `name` defaults to the function's name; `timeout` (e.g. "5m") to the target's; `secrets` names the
    secrets the action may read with `ctx.secret(name)`. The function itself is returned unchanged, so it
    can still be called directly. A hint the schema cannot express raises TypeError here, at import.
    """

    label = "@cronwright.action"
    if name is not None and (not isinstance(name, str) or not NAME.fullmatch(name)):
        raise TypeError(f"{label}: name {name!r} must be a Python identifier")
    if isinstance(secrets, str) or not all(isinstance(s, str) and NAME.fullmatch(s) for s in secrets):
        raise TypeError(f"{label}: secrets must be a list of names like ['SMTP_PASSWORD'], not {secrets!r}")
    if isinstance(timeout, timedelta):
        timeout = f"{timeout // timedelta(microseconds=1)}us"
    elif timeout is not None and not isinstance(timeout, str):
        raise TypeError(f"{label}: timeout must be a duration such as '5m', not {timeout!r}")
    text = timeout

    def mark(target: _F) -> _F:
        setattr(target, MARK, _mark(target, name, text, tuple(secrets)))
        return target

    return mark if func is None else mark(func)


def actions_of(module: types.ModuleType) -> dict[str, tuple[Callable[..., Any], ActionMark]]:
    """Every marked function a module exposes, by action name. Two different functions under one name fail."""
    found: dict[str, tuple[Callable[..., Any], ActionMark]] = {}
    for value in vars(module).values():
        mark = getattr(value, MARK, None)
        if not isinstance(mark, ActionMark) or not callable(value):
            continue
        seen = found.get(mark.name)
        if seen is not None and seen[0] is not value:
            raise TypeError(f"two functions in {module.__name__} are both the action {mark.name!r}")
        found[mark.name] = (value, mark)
    return found


def call(func: Callable[..., Any], mark: ActionMark, args: Mapping[str, Any], ctx: Context) -> Any:
    """Calls an action with its args as keyword arguments, and the context if it takes one."""
    kwargs = {key: value for key, value in args.items() if mark.takes_extra or key in mark.params}
    for param in mark.nullable:
        kwargs.setdefault(param, None)
    if mark.context_param is not None:
        kwargs[mark.context_param] = ctx
    return func(**kwargs)


# --- schema derivation ----------------------------------------------------------------------------


def _mark(
    func: Callable[..., Any], name: str | None, timeout: str | None, secrets: tuple[str, ...]
) -> ActionMark:
    label = getattr(func, "__qualname__", repr(func))
    action_name = name if name is not None else getattr(func, "__name__", "")
    if not NAME.fullmatch(action_name):
        raise TypeError(f"@cronwright.action on {label}: name {action_name!r} must be a Python identifier")
    schema, context_param, params, nullable, takes_extra = _signature(func, label)
    doc = (func.__doc__ or "").strip().split("\n\n")[0]
    return ActionMark(
        action_name,
        timeout,
        tuple(dict.fromkeys(secrets)),
        schema,
        context_param,
        params,
        nullable,
        takes_extra,
        " ".join(doc.split()),
    )


def _signature(
    func: Callable[..., Any], label: str
) -> tuple[dict[str, Any], str | None, tuple[str, ...], tuple[str, ...], bool]:
    # Imported here, not at the top: `inspect` is most of this module's import time, and `import cronwright`
    # (every CLI call) should not pay it unless an action is actually declared.
    import inspect

    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as error:
        raise TypeError(f"@cronwright.action on {label}: its type hints cannot be read: {error}") from error
    properties: dict[str, Any] = {}
    required: list[str] = []
    nullable: list[str] = []
    context_param: str | None = None
    takes_extra = False
    for param in inspect.signature(func).parameters.values():
        hint = hints.get(param.name, Any)
        if param.kind is param.VAR_KEYWORD:
            takes_extra = True
            continue
        if param.kind is param.VAR_POSITIONAL:
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"@cronwright.action on {label}: parameter {param.name!r} is positional-only, "
                "but args are passed by name"
            )
        if param.name == "ctx" or _is_context(hint):
            context_param = param.name
            continue
        where = f"@cronwright.action on {label}, parameter {param.name!r}"
        schema = _schema(hint, where)
        if param.default is not param.empty:
            default = _json_or_none(param.default)
            if default is not None:
                schema = {**schema, "default": default}
        elif _is_optional(hint):
            nullable.append(param.name)
        else:
            required.append(param.name)
        properties[param.name] = schema
    whole: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        whole["required"] = required
    if not takes_extra:
        # A key no parameter names could never reach the function: refuse it at create (semantic 27).
        whole["additionalProperties"] = False
    return whole, context_param, tuple(properties), tuple(nullable), takes_extra


def _is_context(hint: object) -> bool:
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    members = typing.get_args(hint) if _is_union(hint) else (hint,)
    return any(member is Context for member in members)


def _is_union(hint: object) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _is_optional(hint: object) -> bool:
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return _is_union(hint) and type(None) in typing.get_args(hint)


def _json_or_none(value: object) -> object:
    """The default as JSON, for the schema; None when it has no JSON form (it is then simply not shown)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return value


def _schema(hint: object, where: str) -> dict[str, Any]:
    """The JSON Schema for one type hint; TypeError, naming `where`, for a hint it cannot express."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or hint is object:
        return {}
    if hint is type(None) or hint is None:
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is typing.Annotated:
        inner = _schema(args[0], where)
        notes = [note for note in args[1:] if isinstance(note, str)]
        return {**inner, "description": " ".join(notes)} if notes else inner
    if hint is list or origin is list:
        return {"type": "array", "items": _schema(args[0], where)} if args else {"type": "array"}
    if hint is dict or origin is dict:
        if args and args[0] is not str:
            raise TypeError(f"{where}: dict keys must be str (JSON object keys are strings)")
        return (
            {"type": "object", "additionalProperties": _schema(args[1], where)}
            if args
            else {"type": "object"}
        )
    if origin is typing.Literal:
        return _literal(args, where)
    if _is_union(hint):
        return _union([_schema(member, where) for member in args])
    raise TypeError(
        f"{where}: cannot derive a JSON Schema from {hint!r}; use str, int, float, bool, list[...], "
        "dict[str, ...], Literal[...], Optional[...] or Any"
    )


def _literal(values: Iterable[object], where: str) -> dict[str, Any]:
    values = list(values)
    if not all(value is None or isinstance(value, str | int | float | bool) for value in values):
        raise TypeError(f"{where}: Literal values must be JSON scalars (str, int, float, bool or None)")
    return {"enum": values}


def _union(members: list[dict[str, Any]]) -> dict[str, Any]:
    # `int | None` reads better as {"type": ["integer", "null"]} than as an anyOf, when every member is a bare
    # type; anything richer (arrays with items, enums) keeps the general anyOf.
    if all(set(member) == {"type"} and isinstance(member["type"], str) for member in members):
        return {"type": list(dict.fromkeys(member["type"] for member in members))}
    return {"anyOf": members}
