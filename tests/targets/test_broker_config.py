"""A broker target's config is refused, naming the key and how to fix it, before anything connects (the
brokers are not reached here: see tests/brokers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cronwright.errors import ConfigError
from cronwright.targets.registry import build_registry

from .conftest import config


def _build(tmp_path: Path, target: dict[str, Any]) -> None:
    build_registry(config({"fleet": target}), cache_dir=tmp_path / "cache", base_dir=tmp_path)


def _celery(**action: Any) -> dict[str, Any]:
    return {"kind": "celery", "broker_secret": "BROKER", "actions": {"go": {"task": "app.go", **action}}}


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ({"kind": "celery", "actions": {"go": {"task": "app.go"}}}, 'needs broker_secret = "NAME"'),
        (
            {"kind": "celery", "broker_secret": "amqp://u:p@host//", "actions": {"go": {"task": "x"}}},
            "broker_secret names a secret",
        ),
        ({"kind": "celery", "broker_secret": "B", "actions": {"go": {}}}, 'needs task = "app.tasks.name"'),
        (_celery(result="wait"), 'set backend_secret = "NAME"'),
        (_celery(subject="a.b"), "subject does not apply to a celery action"),
        (_celery(argv=["/bin/true"]), "argv does not apply to a celery action"),
        (_celery(positional=["region"]), "positional arg 'region' must be a required property"),
        ({**_celery(), "url": "https://example.invalid"}, "url does not apply to a celery target"),
        ({**_celery(), "secrets": ["OTHER"]}, "remove env and secrets"),
        ({"kind": "celery", "broker_secret": "B"}, "needs at least one [targets.fleet.actions.NAME]"),
        (
            {"kind": "nats", "broker_secret": "N", "actions": {"go": {"subject": "jobs.>"}}},
            "no spaces, no wildcards",
        ),
        (
            {"kind": "nats", "broker_secret": "N", "actions": {"go": {"subject": "a", "task": "x"}}},
            "task does not apply to a nats action",
        ),
        (
            {
                "kind": "nats",
                "broker_secret": "N",
                "backend_secret": "R",
                "actions": {"go": {"subject": "s"}},
            },
            "backend_secret does not apply to a nats target",
        ),
    ],
)
def test_a_broker_target_config_that_cannot_work_is_refused_saying_what_to_fix(
    tmp_path: Path, target: dict[str, Any], said: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _build(tmp_path, target)
    assert said in str(refused.value)


def test_a_celery_action_carries_its_route_and_its_secrets_names_only(tmp_path: Path) -> None:
    target = {
        "kind": "celery",
        "broker_secret": "BROKER",
        "backend_secret": "RESULTS",
        "timeout": "30s",
        "actions": {
            "go": {
                "task": "app.go",
                "queue": "q",
                "routing_key": "rk",
                "priority": 3,
                "positional": ["region"],
                "result": "wait",
                "args_schema": {"type": "object", "properties": {"region": {}}, "required": ["region"]},
            }
        },
    }
    registry = build_registry(config({"fleet": target}), cache_dir=tmp_path / "cache", base_dir=tmp_path)
    (row,) = registry.describe()
    assert row["kind"] == "celery"
    (action,) = row["actions"]
    assert action["route"] == {
        "result": "wait",
        "task": "app.go",
        "queue": "q",
        "routing_key": "rk",
        "priority": 3,
        "positional": ["region"],
    }
    assert (action["secrets"], action["timeout"]) == (["BROKER", "RESULTS"], "30s")
    assert registry.target("fleet").grace.total_seconds() == 60  # node.misfire_grace: the messages' expiry
