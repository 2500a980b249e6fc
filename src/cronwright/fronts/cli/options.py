"""The CLI's options, made from the protocol's declaration (`cronwright.declare`).

An option that stands for a request field takes its help, its choices, its range and its kind (a flag,
a number, a string) from that field's declaration, so the CLI cannot drift from the protocol, OpenAPI
and MCP: a field's description changed once shows in `--help` too, and a value the model would refuse
for its range or choice is refused by the option, naming the flag. An option the CLI reads its own way
(`--every 5m` for a schedule object, `--retry-backoff 2s` for milliseconds) stays written by hand.

The options are made when their command's options are first read (DeclaringCommand), not when the CLI is
imported: making one builds its model's JSON Schema, and `cronwright tick` or `--version`, which read none of
them, would pay for every verb's at each start (the request models are then not even imported).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pydantic import BaseModel

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class DeclaredOption(click.Option):
    """An option that stands for a request field, and says which (tests hold it to the declaration)."""

    def __init__(self, *args: Any, model: type[BaseModel], field: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = model
        self.field = field


@functools.cache
def _properties(model: type[BaseModel]) -> dict[str, Any]:
    properties: dict[str, Any] = model.model_json_schema()["properties"]
    return properties


def field_schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The JSON Schema of `model.name`, without its `null` alternative (an option left out is null)."""
    declared_as = model.model_fields[name].alias if name in model.model_fields else None
    schema = _properties(model)[declared_as or name]  # a keyword field (`from_`) is its alias
    shapes = [shape for shape in schema.get("anyOf", [schema]) if shape.get("type") != "null"]
    shape = dict(shapes[0]) if len(shapes) == 1 else {}
    return {"description": schema.get("description", ""), **shape}


def declared(
    model: type[BaseModel] | str,
    name: str,
    *flags: str,
    metavar: str | None = None,
    default: Any = None,
) -> Decorator:
    """A click option for request field `model.name` (a model, or its name in cronwright.declare.requests):
    `--name-with-dashes` unless `flags` are given, its value passed under the field's own name. It is made
    when its command's options are first read; the command must be a DeclaringCommand."""
    pending = _Pending(model, name, flags, metavar, default)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if isinstance(function, click.Command):
            function.params.append(pending.make())
        else:
            function.__dict__.setdefault("__click_params__", []).append(pending)
        return function

    return decorate


class _Pending:
    """A declared option not made yet: what `declared` was given."""

    def __init__(
        self,
        model: type[BaseModel] | str,
        name: str,
        flags: tuple[str, ...],
        metavar: str | None,
        default: Any,
    ) -> None:
        self.model, self.name, self.flags, self.metavar, self.default = model, name, flags, metavar, default

    def make(self) -> DeclaredOption:
        model = self.model
        if isinstance(model, str):
            from cronwright.declare import requests

            model = getattr(requests, model)
            assert isinstance(model, type)
        name = self.name
        schema = field_schema(model, name)
        names = self.flags or (f"--{name.replace('_', '-')}",)
        options: dict[str, Any] = {"help": schema["description"], "default": self.default}
        kind = schema.get("type")
        if kind == "boolean":
            options["is_flag"] = True
            options["default"] = False
        elif "enum" in schema:
            options["type"] = click.Choice(schema["enum"])
        elif kind == "integer":
            options["type"] = click.IntRange(schema.get("minimum"), schema.get("maximum"))
            options["show_default"] = self.default is not None
        if self.metavar is not None:
            options["metavar"] = self.metavar
        return DeclaredOption((*names, name), model=model, field=name, **options)


class DeclaringCommand(click.Command):
    """A command whose declared options are made when its options are first read (parsing it, its help)."""

    _params: list[click.Parameter]

    @property
    def params(self) -> list[click.Parameter]:
        if any(isinstance(param, _Pending) for param in self._params):
            self._params = [param.make() if isinstance(param, _Pending) else param for param in self._params]
        return self._params

    @params.setter
    def params(self, params: list[click.Parameter]) -> None:
        self._params = params
