"""The pure part of delivery: backoff, giving up after a day, and a flood folded into one digest."""

from __future__ import annotations

from datetime import datetime, timedelta

from cronwright.core.notifications import DIGEST, Notification, Status, Transition
from cronwright.notify.plan import after_failure, after_success, digest_of, plan, retry_delay
from cronwright.notify.rules import Rule, notifications_for

from .conftest import BERLIN, alert

NOW = datetime.fromisoformat("2026-03-01T03:01:00+01:00")
EVERYTHING = frozenset(Transition)


def pending(count: int, channel: str = "ops") -> list[Notification]:
    rule = Rule(on=EVERYTHING, notify=(channel,))
    return [notifications_for([rule], alert(fire_id=f"f-{n}"), BERLIN)[0] for n in range(count)]


def test_retries_double_from_15_seconds_up_to_30_minutes() -> None:
    assert [retry_delay(n).total_seconds() for n in range(1, 9)] == [15, 30, 60, 120, 240, 480, 960, 1800]
    assert retry_delay(40) == timedelta(minutes=30)


def test_a_failed_attempt_is_due_again_after_its_backoff() -> None:
    [item] = pending(1)
    failed = after_failure(item, NOW, "HTTP 503")
    assert (failed.attempts, failed.status, failed.last_error) == (1, Status.PENDING, "HTTP 503")
    assert failed.next_attempt_at == NOW + timedelta(seconds=15)


def test_a_notification_refused_for_a_day_is_abandoned() -> None:
    [item] = pending(1)
    almost = after_failure(item.evolve(attempts=60), item.created_at + timedelta(hours=23), "HTTP 503")
    assert almost.status is Status.PENDING
    late = after_failure(item.evolve(attempts=60), item.created_at + timedelta(hours=23, minutes=45), "x")
    assert late.status is Status.ABANDONED


def test_success_records_when_it_was_delivered() -> None:
    [item] = pending(1)
    done = after_success(item, NOW)
    assert (done.status, done.delivered_at, done.attempts) == (Status.DELIVERED, NOW, 1)


def test_ten_a_minute_go_one_by_one() -> None:
    due = pending(10)
    decided = plan(due, {}, NOW, BERLIN)
    assert [item.id for item in decided.send] == [item.id for item in sorted(due, key=lambda i: i.id)]
    assert decided.fold == ()


def test_eleven_at_once_become_one_digest() -> None:
    due = pending(11)
    decided = plan(due, {}, NOW, BERLIN)
    assert decided.send == ()
    [(digest, members)] = decided.fold
    assert {member.id for member in members} == {item.id for item in due}
    assert digest.transition == DIGEST
    assert digest.payload["transition"] == "digest" and digest.payload["id"] == digest.id
    assert digest.payload["at"] == "2026-03-01T03:01:00+01:00"
    assert sorted(item["id"] for item in digest.payload["items"]) == sorted(item.id for item in due)


def test_a_channel_near_its_limit_folds_what_would_pass_it() -> None:
    decided = plan(pending(3), {"ops": 8}, NOW, BERLIN)
    assert decided.send == () and len(decided.fold) == 1


def test_a_channel_at_its_limit_waits_for_the_minute_to_pass() -> None:
    decided = plan(pending(3), {"ops": 10}, NOW, BERLIN)
    assert decided == type(decided)()


def test_channels_are_counted_apart() -> None:
    decided = plan(pending(11, "ops") + pending(2, "mail"), {}, NOW, BERLIN)
    assert {item.channel for item in decided.send} == {"mail"}
    assert [digest.channel for digest, _ in decided.fold] == ["ops"]


def test_a_digest_has_the_same_id_for_the_same_members() -> None:
    due = pending(12)
    assert digest_of(due, NOW, BERLIN).id == digest_of(list(reversed(due)), NOW, BERLIN).id
    assert digest_of(due[:11], NOW, BERLIN).id != digest_of(due, NOW, BERLIN).id
