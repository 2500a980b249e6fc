"""The message every broker engine sends (targets/brokers/message.py): its id, expiry, headers and args, and
the scrubbing of broker URLs out of what a library says."""

from __future__ import annotations

from datetime import timedelta

from cronwright.targets.attempt import Call
from cronwright.targets.brokers.message import message_id, message_of, scrub
from cronwright.targets.specs import Route, TargetSpec

from .conftest import T0


def _call(attempt: int, created: str = "2026-03-01T08:00:00Z") -> Call:
    envelope = {
        "schedule": "refresh",
        "job_id": 7,
        "target": "fleet",
        "action": "go",
        "args": {"region": "eu", "full": True},
        "cron": {
            "fire_id": "7-12",
            "attempt": attempt,
            "scheduled_for": "2026-03-02T10:00:00.250+01:00",
            "nominal": "2026-03-02T10:00:00+01:00",
            "fired_at": "2026-03-02T10:04:07+01:00",
        },
    }
    return Call(envelope, {}, 30.0, T0, created=created)


TARGET = TargetSpec("fleet", "celery", {}, broker_secret="B", grace=timedelta(seconds=90))


def test_a_first_attempt_expires_its_grace_after_it_was_due_and_a_retry_its_grace_after_it_started() -> None:
    first = message_of(_call(1), TARGET, Route(task="app.go"))
    assert first.expires.isoformat() == "2026-03-02T09:01:30.250000+00:00"
    retry = message_of(_call(2), TARGET, Route(task="app.go"))
    assert retry.expires.isoformat() == "2026-03-02T09:05:37+00:00"


def test_the_id_is_the_same_for_one_attempt_and_differs_for_a_retry_or_another_store() -> None:
    route = Route(task="app.go")
    assert message_of(_call(1), TARGET, route).id == message_of(_call(1), TARGET, route).id
    assert message_of(_call(1), TARGET, route).id != message_of(_call(2), TARGET, route).id
    fresh_store = _call(1, created="2026-03-02T09:00:00Z")
    assert message_of(fresh_store, TARGET, route).id != message_of(_call(1), TARGET, route).id
    expected = message_id(7, "refresh", "2026-03-01T08:00:00Z", "7-12", 1)
    assert message_of(_call(1), TARGET, route).id == expected


def test_headers_carry_the_occurrence_and_positional_args_leave_the_kwargs() -> None:
    message = message_of(_call(1), TARGET, Route(task="app.go", positional=("region",)))
    assert (message.args, dict(message.kwargs)) == (("eu",), {"full": True})
    assert dict(message.headers) == {
        "cronwright_fire_id": "7-12",
        "cronwright_attempt": "1",
        "cronwright_scheduled_for": "2026-03-02T10:00:00.250+01:00",
        "cronwright_nominal": "2026-03-02T10:00:00+01:00",
        "cronwright_schedule": "refresh",
        "cronwright_job_id": "7",
    }


def test_scrub_hides_a_broker_url_and_its_password_as_written_or_decoded() -> None:
    url = "amqp://app:p%40ss-w0rd@rabbit:5672/prod"
    said = f"failed on {url}; login p@ss-w0rd refused; raw p%40ss-w0rd"
    assert scrub(said, url, None) == "failed on ***; login *** refused; raw ***"
