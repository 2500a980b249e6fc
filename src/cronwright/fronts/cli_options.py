"""The CLI's options, made from the protocol's declaration (`cronwright.declare`).

An option that stands for a request field takes its help, its choices, its range and its kind (a flag,
a number, a string) from that field's declaration, so the CLI cannot drift from the protocol, OpenAPI
and MCP: a field's description changed once shows in `--help` too, and a value the model would refuse
for its range or choice is refused by the option, naming the flag. An option the CLI reads its own way
(`--every 5m` for a schedule object, `--retry-backoff 2s` for milliseconds) stays written by hand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click
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
    model: type[BaseModel],
    name: str,
    *flags: str,
    metavar: str | None = None,
    default: Any = None,
) -> Decorator:
    """A click option for request field `model.name`: `--name-with-dashes` unless `flags` are given,
    its value passed under the field's own name."""
    schema = field_schema(model, name)
    names = flags or (f"--{name.replace('_', '-')}",)
    options: dict[str, Any] = {"help": schema["description"], "default": default}
    kind = schema.get("type")
    if kind == "boolean":
        options["is_flag"] = True
        options["default"] = False
    elif "enum" in schema:
        options["type"] = click.Choice(schema["enum"])
    elif kind == "integer":
        options["type"] = click.IntRange(schema.get("minimum"), schema.get("maximum"))
        options["show_default"] = default is not None
    if metavar is not None:
        options["metavar"] = metavar
    return click.option(*names, name, cls=DeclaredOption, model=model, field=name, **options)
