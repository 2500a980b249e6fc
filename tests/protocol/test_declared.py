"""The protocol checks each request against its declared model: unknown fields are refused wherever they
appear, naming the field and the one meant, and a wrong type gets the protocol's words, not pydantic's."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Harness
from cronwright.declare.requests import MODELS, example

from .support import agent, create, refused


@pytest.mark.parametrize(
    ("request_", "field", "meant"),
    [
        ({"action": "list", "stat": "paused"}, "stat", "state"),
        ({"action": "history", "limt": 3}, "limt", "limit"),
        ({"action": "preview", "expression": "@daily", "count": 2, "tzz": "UTC"}, "tzz", "tz"),
        (create("x", lifetme="1h"), "lifetme", "lifetime"),
        (create("x", schedule={"cron": "0 7 * * *", "tzz": "UTC"}), "schedule.tzz", "tz"),
        ({"action": "update", "name": "daily", "changes": {"misfir": "skip"}}, "misfir", "misfire"),
    ],
)
def test_an_unknown_field_is_refused_naming_it_and_the_one_meant(
    harness: Harness, request_: dict[str, Any], field: str, meant: str
) -> None:
    harness.create("daily", {"cron": "0 10 * * *"})
    reply = refused(harness, request_, "invalid", field=field)

    assert f"did you mean '{meant}'?" in reply["message"], reply


def test_a_typo_of_a_schedules_kind_is_named_with_the_kind_meant(harness: Harness) -> None:
    # Issue 35: {"corn": ...} was refused as a schedule "of no kind", never naming the typo.
    reply = refused(harness, create("x", schedule={"corn": "0 7 * * *"}), "invalid", field="schedule")

    assert "unknown key 'corn' (did you mean 'cron'?)" in reply["message"], reply
    assert "needs exactly one of 'cron', 'every', 'every_ms' or 'at'" in reply["message"]


def test_an_unknown_field_far_from_any_lists_the_fields_there_are(harness: Harness) -> None:
    reply = refused(harness, {"action": "list", "colour": "blue"}, "invalid", field="colour")

    assert "did you mean" not in reply["message"]
    assert "after_name, limit, request_id, source, state, target" in reply["message"]


def test_a_tz_beside_every_says_it_goes_with_cron(harness: Harness) -> None:
    reply = refused(
        harness, create("x", schedule={"every": "5m", "tz": "UTC"}), "invalid", field="schedule.tz"
    )

    assert "'tz' goes with 'cron' only" in reply["message"]


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (create("x", max_attempts="3"), "max_attempts"),
        (create("x", args=[1]), "args"),
        ({"action": "create_job", "job": "x"}, "job"),
        (create("x", schedule="0 7 * * *"), "schedule"),
        ({"action": "list", "limit": 2.0}, "limit"),
        ({"action": "update", "name": "daily", "changes": []}, "changes"),
    ],
)
def test_a_wrong_type_is_refused_in_the_protocols_words(
    harness: Harness, request_: dict[str, Any], field: str
) -> None:
    reply = refused(harness, request_, "invalid", field=field)

    for pydantic_words in ("pydantic", "http", "Input should", "model_type", "dict_type"):
        assert pydantic_words not in reply["message"], reply


def test_a_request_about_one_schedule_asks_for_its_name_or_its_id(harness: Harness) -> None:
    for action in ("get", "pause", "resume", "run_now", "delete"):
        reply = refused(harness, {"action": action}, "invalid", field="name")
        assert "'name' or its 'job_id'" in reply["message"]


def test_a_name_taken_by_another_source_is_not_offered_for_deletion(harness: Harness) -> None:
    harness.create("shared", {"cron": "0 10 * * *"})  # the operator's
    theirs = refused(harness, create("shared"), "name_taken", source=agent())
    harness.protocol.dispatch(create("mine"), agent())
    own = refused(harness, create("mine"), "name_taken", source=agent(max_schedules=5))

    assert "delete" not in theirs["message"] and "choose another" in theirs["message"]
    assert "`delete` it first" in own["message"]


def test_an_unknown_target_points_at_the_targets_action(harness: Harness) -> None:
    reply = refused(harness, create("x", target="nope"), "target_not_allowed")

    assert "`targets`" in reply["message"] and "cronwright targets" not in reply["message"]


def test_every_model_example_is_a_valid_request_of_its_model() -> None:
    for action, model in MODELS.items():
        assert model.model_validate(example(action)).model_dump(exclude_unset=True) == example(action)
