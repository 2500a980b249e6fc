"""[[alert]] rules: which transitions go to which channels, and the notification each makes."""

from __future__ import annotations

from cronwright.core.notifications import JobRef, Transition, notification_id
from cronwright.notify.rules import Rule, channels_for, notifications_for

from .conftest import BERLIN, JOB, alert

FAILURES = frozenset({Transition.FAILED, Transition.RECOVERED})


def test_a_rule_takes_only_the_transitions_it_names() -> None:
    rules = [Rule(on=FAILURES, notify=("ops",))]
    assert channels_for(rules, alert(Transition.FAILED)) == ["ops"]
    assert channels_for(rules, alert(Transition.MISSED)) == []


def test_target_patterns_match_target_dot_action() -> None:
    backup = Rule(on=FAILURES, notify=("ops",), target="backup.*")
    reports = Rule(on=FAILURES, notify=("mail",), target="reports.*")
    assert channels_for([backup, reports], alert()) == ["ops"]


def test_source_and_name_patterns_must_all_match() -> None:
    rule = Rule(on=FAILURES, notify=("ops",), source="agent", name="nightly-*")
    assert channels_for([rule], alert()) == []  # the job's source is cli
    by_agent = JobRef(JOB.id, JOB.name, JOB.target, JOB.action, "agent")
    assert channels_for([rule], alert(job=by_agent)) == ["ops"]


def test_a_channel_named_by_two_rules_gets_one_notification() -> None:
    rules = [Rule(on=FAILURES, notify=("ops", "mail")), Rule(on=FAILURES, notify=("ops",), name="nightly-*")]
    made = notifications_for(rules, alert(), BERLIN)
    assert [item.channel for item in made] == ["ops", "mail"]


def test_a_node_alert_matches_only_rules_without_patterns() -> None:
    down = alert(Transition.NODE_DOWN, job=None, fire_id=None, key="node_down:node-b:2026-03-01T02:00:00Z")
    anywhere = Rule(on=frozenset({Transition.NODE_DOWN}), notify=("ops",))
    backups_only = Rule(on=frozenset({Transition.NODE_DOWN}), notify=("mail",), target="backup.*")
    assert channels_for([anywhere, backups_only], down) == ["ops"]


def test_the_body_has_the_semantic_38_shape_with_instants_in_the_node_zone() -> None:
    [made] = notifications_for([Rule(on=FAILURES, notify=("ops",))], alert(), BERLIN)
    assert made.payload == {
        "id": made.id,
        "transition": "failed",
        "at": "2026-03-01T03:00:05+01:00",
        "job": {"id": 7, "name": "nightly-backup", "target": "backup", "action": "nightly", "source": "cli"},
        "fire_id": "f-1",
        "scheduled_for": "2026-03-01T03:00:00+01:00",
        "message": "exit status 2",
    }


def test_the_id_depends_on_the_transition_and_the_channel_only() -> None:
    """Two nodes that detect one transition compute one id, so the outbox keeps one notification."""
    first = alert(at="2026-03-01T03:00:05+01:00")
    second = alert(at="2026-03-01T03:00:09+01:00")  # detected a few seconds later, elsewhere
    assert first.key == second.key
    assert notification_id(first.key, "ops") == notification_id(second.key, "ops")
    assert notification_id(first.key, "ops") != notification_id(first.key, "mail")
