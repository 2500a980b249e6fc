"""The hand check of plain args schemas (plainschema.py) never says yes where jsonschema would say no: each
schema it calls plain passes jsonschema's check_schema, and each value it passes jsonschema finds valid. It
says yes often enough to matter (the decorator's schemas, typical args), and no where it cannot be sure."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronwright.errors import ArgsInvalid
from cronwright.targets import allowlist as allowlist_module
from cronwright.targets.allowlist import StaticAllowlist
from cronwright.targets.plainschema import certainly_valid, is_plain_schema

NAMES = st.sampled_from(["a", "b", "c"])
TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5, -2.0]),
    st.sampled_from(["", "x"]),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3)
)
# Schemas of the plain keywords, sometimes malformed (a bad type name, a repeated required name, an empty
# anyOf) or with a keyword the hand check leaves to jsonschema.
LEAVES = st.one_of(
    st.booleans(),
    st.just({}),
    st.builds(lambda t: {"type": t}, st.sampled_from([*TYPES, "float"])),
    st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), max_size=3)),
    st.builds(lambda values: {"enum": values}, st.lists(SCALARS, max_size=3)),
    st.just({"minimum": 0}),
    st.just({"type": "string", "description": "text", "default": "x"}),
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(NAMES, inner, max_size=3)},
            optional={"required": st.lists(NAMES, max_size=3), "additionalProperties": inner},
        ),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda members: {"anyOf": members}, st.lists(inner, max_size=3)),
        st.builds(lambda extra: {"additionalProperties": extra}, inner),
    )


SCHEMAS = st.recursive(LEAVES, _extend, max_leaves=8)


# Where JSON Schema's idea of a type or of equality is not Python's: each schema meets these too.
TRICKY = [True, False, 0, 1, 1.0, 1.5, None, "", "x", [], [True], [1.0], (1,), {}, {"a": True}, {"a": 1.0}]


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS, st.lists(VALUES, max_size=5))
def test_a_yes_of_the_hand_check_is_a_yes_of_jsonschema(schema: Any, values: list[Any]) -> None:
    if not is_plain_schema(schema):
        return
    jsonschema.Draft202012Validator.check_schema(schema)  # a plain schema is a valid one
    validator = jsonschema.Draft202012Validator(schema)
    for value in [*values, *TRICKY, *({name: item} for name in "ab" for item in TRICKY)]:
        if certainly_valid(schema, value):
            assert validator.is_valid(value), (schema, value)


NOOP = {"type": "object", "properties": {}, "additionalProperties": False}
COPY = {
    "type": "object",
    "properties": {
        "src": {"type": "string", "description": "where from"},
        "tries": {"type": "integer", "default": 3},
        "mode": {"enum": ["fast", "safe"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {"type": ["number", "null"]},
        "extra": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "any": {},
    },
    "required": ["src"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (NOOP, {}),
        ({"type": "object"}, {"anything": [1, {"x": None}]}),
        (COPY, {"src": "/a"}),
        (COPY, {"src": "/a", "tries": 2, "mode": "safe", "tags": ["x"], "limit": 1.5, "extra": {"k": True}}),
        (COPY, {"src": "/a", "limit": None, "any": {"deep": [1]}}),
    ],
)
def test_typical_args_are_passed_by_hand(schema: dict[str, Any], value: dict[str, Any]) -> None:
    assert is_plain_schema(schema)
    assert certainly_valid(schema, value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (NOOP, {"x": 1}),  # invalid
        (COPY, {}),  # invalid: src is required
        ({"type": "integer"}, True),  # a bool is no integer
        ({"type": "integer"}, 1.0),  # an integer to jsonschema, but left to it
        ({"enum": [1]}, True),  # True is not 1 in JSON Schema
        ({"enum": [1]}, 1.0),  # equal in JSON Schema, but left to it
        ({"type": "array"}, (1, 2)),  # a tuple is no JSON array
    ],
)
def test_what_is_invalid_or_unsure_is_left_to_jsonschema(schema: dict[str, Any], value: object) -> None:
    assert not certainly_valid(schema, value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "float"},
        {"type": ["string", "string"]},
        {"type": []},
        {"required": ["a", "a"]},
        {"required": "a"},
        {"anyOf": []},
        {"items": [{"type": "string"}]},
        {"properties": {"a": 1}},
        {"description": 5},
        {"pattern": "^a"},  # valid, but not plain: jsonschema checks it
        {"$ref": "#/$defs/x"},
    ],
)
def test_a_schema_that_is_malformed_or_not_plain_is_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert not is_plain_schema(schema)


def test_args_the_hand_check_leaves_are_still_refused_with_their_paths() -> None:
    allowlist = StaticAllowlist({"t": {"copy": COPY}})
    allowlist.check("t", "copy", {"src": "/a", "tries": 1.0})  # valid, decided by jsonschema
    with pytest.raises(ArgsInvalid) as refused:
        allowlist.check("t", "copy", {"src": "/a", "tries": True, "srcs": 1})
    paths = [problem["path"] for problem in refused.value.details["problems"]]
    assert paths == ["$.srcs", "$.tries"], refused.value.details


def test_no_args_are_judged_once_per_schema_and_refused_where_one_is_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A no-arg action's every run checks `{}`: whether a plain schema takes no args is found once.
    judged: list[object] = []
    real = certainly_valid  # what the allowlist module holds under that name

    def counted(schema: object, value: object) -> bool:
        judged.append(value)
        return real(schema, value)

    monkeypatch.setattr(allowlist_module, "certainly_valid", counted)
    takes_none = {"type": "object", "properties": {}, "additionalProperties": False}
    allowlist = StaticAllowlist({"t": {"noop": takes_none, "copy": COPY}})
    for _ in range(3):
        allowlist.check("t", "noop", {})
    assert judged == [{}]
    with pytest.raises(ArgsInvalid) as refused:
        allowlist.check("t", "copy", {})
    assert [p["path"] for p in refused.value.details["problems"]] == ["$"], refused.value.details
    with pytest.raises(ArgsInvalid):
        allowlist.check("t", "noop", {"stray": 1})
