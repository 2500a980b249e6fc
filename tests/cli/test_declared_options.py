"""The CLI's options for request fields are made from the declaration (fronts/cli/options.py), so they
say and check what the protocol does: the same help, the same choices, the same ranges (issue 13)."""

from __future__ import annotations

from typing import Any

import click
import pytest
from pydantic import ValidationError

from cronwright.declare.requests import MODELS
from cronwright.fronts.cli import cli
from cronwright.fronts.cli.options import DeclaredOption, field_schema

from .blackbox import Cronwright


def _options() -> list[tuple[str, click.Option, type[Any], str]]:
    """Each declared option of each verb, with the field it stands for."""
    assert isinstance(cli, click.Group)
    return [
        (verb, param, param.model, param.field)
        for verb, command in cli.commands.items()
        for param in command.params
        if isinstance(param, DeclaredOption)
    ]


def test_every_verb_that_takes_request_fields_takes_them_from_the_declaration() -> None:
    verbs = {verb for verb, *_ in _options()}
    assert {"add", "update", "list", "history", "preview"} <= verbs, verbs


@pytest.mark.parametrize(
    ("verb", "option", "model", "field"),
    _options(),
    ids=[f"{verb} {option.opts[0]}" for verb, option, _, _ in _options()],
)
def test_a_declared_option_says_and_checks_what_its_field_does(
    verb: str, option: click.Option, model: type[Any], field: str
) -> None:
    schema = field_schema(model, field)
    assert option.help == schema["description"]
    if "enum" in schema:
        assert isinstance(option.type, click.Choice) and list(option.type.choices) == schema["enum"]
    if schema.get("type") == "integer":
        assert isinstance(option.type, click.IntRange)
        assert (option.type.min, option.type.max) == (schema.get("minimum"), schema.get("maximum"))
        # The edges the option lets through, the model takes; one past them, both refuse.
        action = _action(model)
        base = _request(action)
        for edge in (schema["minimum"], schema.get("maximum")):
            if edge is not None:
                MODELS[action].model_validate(_with(base, field, edge))
        with pytest.raises(ValidationError):
            MODELS[action].model_validate(_with(base, field, schema["minimum"] - 1))
    assert option.name == field, "the value reaches the protocol under the field's own name"


def _action(model: type[Any]) -> str:
    for action, declared in MODELS.items():
        if declared is model or model.__name__ in str(declared.model_fields.get("job")) + str(
            declared.model_fields.get("changes")
        ):
            return action
    raise AssertionError(model)


def _request(action: str) -> dict[str, Any]:
    if action == "create_job":
        return {
            "action": action,
            "job": {"name": "x", "target": "t", "action": "a", "run_at": "2030-01-01T00:00:00Z"},
        }
    if action == "preview":
        return {"action": action, "expression": "@daily"}
    return {"action": action}


def _with(request: dict[str, Any], field: str, value: object) -> dict[str, Any]:
    if "job" in request:
        return {**request, "job": {**request["job"], field: value}}
    return {**request, field: value}


def test_the_real_binary_refuses_an_out_of_range_value_naming_the_flag_and_the_range(cw: Cronwright) -> None:
    refused = cw.run("add", "x", "--target", "sh", "--action", "log", "--every", "5m", "--max-attempts", "0")
    assert refused.rc == 2
    assert "--max-attempts" in refused.stderr and "1<=x<=100" in refused.stderr, refused.stderr
    wrong = cw.run("list", "--state", "runing")
    assert (
        wrong.rc == 2 and "'runing' is not one of 'pending', 'active', 'paused', 'running'" in wrong.stderr
    ), wrong.stderr
    assert cw.run("list", "--json").rc == 0


def test_a_refusal_names_the_flag_that_gave_the_field_not_the_protocol_field(cw: Cronwright) -> None:
    """Refusals say what to fix in the caller's own terms: the CLI's flag (or argument)."""
    base = ("add", "x", "--target", "sh", "--action", "log")
    lifetime = cw.run(*base, "--cron", "0 9 * * *", "--lifetime", "yesterday")
    assert lifetime.rc == 1 and "refused: invalid (--lifetime): " in lifetime.stderr, lifetime.stderr
    args = cw.run(*base, "--cron", "0 9 * * *", "--args", "[1]")
    assert "refused: invalid (--args): " in args.stderr, args.stderr
    named = cw.run("add", "bad name", "--target", "sh", "--action", "log", "--cron", "0 9 * * *")
    assert "refused: invalid (NAME): " in named.stderr, named.stderr
