"""`@cronwright.action`: args schemas derived from type hints, and the context an action receives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, Optional

import jsonschema
import pytest

import cronwright
from cronwright.targets.decorator import MARK, ActionMark, Context, UndeclaredSecret, call


def mark_of(func: Any) -> ActionMark:
    mark = getattr(func, MARK)
    assert isinstance(mark, ActionMark)
    return mark


def context(**secrets: str) -> Context:
    now = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    return Context(
        fire_id="f", attempt=1, scheduled_for=now, deadline=now + timedelta(minutes=1), secrets=secrets
    )


def test_scalars_lists_and_dicts_become_json_schema_types() -> None:
    @cronwright.action
    # The ignore below is kept: bare dict and list annotations are what the decorator is tested on.
    def act(a: str, b: int, c: float, d: bool, e: list[int], f: dict[str, str], g: dict, h: list) -> None:  # type: ignore[type-arg]
        pass

    assert mark_of(act).args_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer"},
            "c": {"type": "number"},
            "d": {"type": "boolean"},
            "e": {"type": "array", "items": {"type": "integer"}},
            "f": {"type": "object", "additionalProperties": {"type": "string"}},
            "g": {"type": "object"},
            "h": {"type": "array"},
        },
        "required": ["a", "b", "c", "d", "e", "f", "g", "h"],
        "additionalProperties": False,
    }


def test_defaults_and_optionals_are_not_required_and_literals_are_enums() -> None:
    @cronwright.action(timeout="5m", secrets=["SMTP_PASSWORD"])
    def send(
        to: str,
        mode: Literal["text", "html"] = "text",
        cc: Optional[str] = None,  # noqa: UP045 - the spelling under test
        bcc: list[str] | None = None,
        note: Annotated[str, "shown to the reader"] = "",
        retries: int | None = None,
        anything: Any = None,
    ) -> None:
        pass

    mark = mark_of(send)
    assert mark.timeout == "5m"
    assert mark.secrets == ("SMTP_PASSWORD",)
    assert mark.args_schema == {
        "type": "object",
        "properties": {
            "to": {"type": "string"},
            "mode": {"enum": ["text", "html"], "default": "text"},
            "cc": {"type": ["string", "null"]},
            "bcc": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "note": {"type": "string", "description": "shown to the reader", "default": ""},
            "retries": {"type": ["integer", "null"]},
            "anything": {},
        },
        "required": ["to"],
        "additionalProperties": False,
    }


def test_an_optional_without_a_default_is_not_required_and_receives_none() -> None:
    @cronwright.action
    def act(who: str | None) -> str:
        return repr(who)

    mark = mark_of(act)
    assert "required" not in mark.args_schema
    assert call(act, mark, {}, context()) == "None"


def test_the_schema_validates_args_as_the_function_expects() -> None:
    @cronwright.action
    def act(n: int, tags: list[str], level: Literal["low", "high"] = "low") -> None:
        pass

    validator = jsonschema.Draft202012Validator(mark_of(act).args_schema)
    assert validator.is_valid({"n": 3, "tags": ["a"]})
    assert not validator.is_valid({"n": "3", "tags": ["a"]})
    assert not validator.is_valid({"n": 3, "tags": ["a"], "level": "medium"})
    assert not validator.is_valid({"tags": []})


def test_ctx_by_name_or_by_annotation_is_the_context_not_an_arg() -> None:
    @cronwright.action
    # The ignore below is kept: an unannotated `ctx` is what the decorator is tested on.
    def by_name(ctx, n: int) -> Any:  # type: ignore[no-untyped-def]
        return ctx.fire_id, n

    @cronwright.action
    def by_type(run: Context, n: int) -> Any:
        return run.attempt, n

    assert set(mark_of(by_name).args_schema["properties"]) == {"n"}
    assert set(mark_of(by_type).args_schema["properties"]) == {"n"}
    assert call(by_name, mark_of(by_name), {"n": 1}, context()) == ("f", 1)
    assert call(by_type, mark_of(by_type), {"n": 2}, context()) == (1, 2)


def test_keys_the_schema_does_not_name_reach_only_a_function_that_takes_kwargs() -> None:
    @cronwright.action
    def strict(n: int) -> Any:
        return n

    @cronwright.action
    def loose(n: int, **rest: Any) -> Any:
        return rest

    assert call(strict, mark_of(strict), {"n": 1, "extra": 2}, context()) == 1
    assert call(loose, mark_of(loose), {"n": 1, "extra": 2}, context()) == {"extra": 2}


def test_a_schema_refuses_keys_no_parameter_names_unless_the_function_takes_kwargs() -> None:
    @cronwright.action
    def strict(ctx: Context, name: str = "world") -> None:
        pass

    @cronwright.action
    def loose(name: str = "world", **rest: Any) -> None:
        pass

    assert mark_of(strict).args_schema["additionalProperties"] is False
    assert "additionalProperties" not in mark_of(loose).args_schema
    assert not jsonschema.Draft202012Validator(mark_of(strict).args_schema).is_valid({"nmae": "Ada"})
    assert jsonschema.Draft202012Validator(mark_of(loose).args_schema).is_valid({"nmae": "Ada"})


def test_hints_without_a_json_form_fail_at_decoration_naming_the_parameter() -> None:
    with pytest.raises(TypeError, match=r"parameter 'when'.*cannot derive a JSON Schema"):

        @cronwright.action
        def act(when: datetime) -> None:
            pass

    with pytest.raises(TypeError, match="dict keys must be str"):

        @cronwright.action
        def act2(m: dict[int, str]) -> None:
            pass


def test_positional_only_parameters_and_bad_options_are_refused() -> None:
    with pytest.raises(TypeError, match="positional-only"):

        @cronwright.action
        def act(n: int, /) -> None:
            pass

    with pytest.raises(TypeError, match="list of names"):
        cronwright.action(secrets="SMTP_PASSWORD")
    with pytest.raises(TypeError, match="Python identifier"):
        cronwright.action(name="not valid")


def test_the_function_stays_callable_and_the_docstring_is_the_description() -> None:
    @cronwright.action(name="renamed", timeout=timedelta(seconds=90))
    def act(n: int) -> int:
        """Doubles n.

        More words that the description leaves out.
        """
        return n * 2

    assert act(4) == 8
    assert mark_of(act).name == "renamed"
    assert mark_of(act).timeout == "90000000us"
    assert mark_of(act).description == "Doubles n."


def test_a_context_gives_declared_secrets_only() -> None:
    ctx = context(SMTP_PASSWORD="hunter2")
    assert ctx.secret("SMTP_PASSWORD") == "hunter2"
    with pytest.raises(UndeclaredSecret, match="OTHER"):
        ctx.secret("OTHER")
    assert "hunter2" not in repr(ctx)


def test_a_context_refuses_naive_instants() -> None:
    with pytest.raises(ValueError, match="aware"):
        Context(
            fire_id="f",
            attempt=1,
            scheduled_for=datetime(2026, 1, 1),
            deadline=datetime(2026, 1, 1, tzinfo=UTC),
        )
