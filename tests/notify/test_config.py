"""[notify.NAME] and [[alert]] in cronwright.toml: what is accepted, and refusals that say how to fix them."""

from __future__ import annotations

from typing import Any

import pytest

from cronwright.config.settings import parse
from cronwright.core.notifications import Transition
from cronwright.errors import ConfigError
from cronwright.notify.rules import Rule
from cronwright.notify.setup import rules_of

WEBHOOK = {"kind": "webhook", "url": "https://example.invalid/alerts", "signing_secret": "ALERT_SECRET"}
MAIL = {"kind": "email", "smtp": "smtp://127.0.0.1:25", "from": "cw@example.invalid", "to": ["o@x.invalid"]}


def test_the_designs_example_parses_into_rules() -> None:
    config = parse(
        {
            "notify": {"ops": WEBHOOK, "mail": MAIL},
            "alert": [
                {"on": ["failed", "recovered"], "match": {"target": "backup.*"}, "notify": ["ops", "mail"]}
            ],
        }
    )
    assert config.notify["mail"].sender == "cw@example.invalid"
    assert config.notify["ops"].timeout.total_seconds() == 10
    assert rules_of(config) == (
        Rule(
            on=frozenset({Transition.FAILED, Transition.RECOVERED}), notify=("ops", "mail"), target="backup.*"
        ),
    )


def test_per_job_metrics_defaults_to_ten_thousand() -> None:
    assert parse({}).node.per_job_metrics == 10_000
    assert parse({"node": {"per_job_metrics": 0}}).node.per_job_metrics == 0


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (
            {"notify": {"ops": {"kind": "webhook", "url": "https://x.invalid/"}}},
            "needs url and signing_secret",
        ),
        ({"notify": {"m": {**MAIL, "smtp": "http://x.invalid"}}}, "smtp must be smtp://HOST"),
        ({"notify": {"m": {**MAIL, "smtp": "smtp://u:p@x.invalid"}}}, "must not carry credentials"),
        ({"notify": {"m": {k: v for k, v in MAIL.items() if k != "to"}}}, "needs smtp, from and to"),
        ({"notify": {"c": {"kind": "apprise"}}}, "needs url, urls or url_secrets"),
        ({"notify": {"c": {"kind": "pager"}}}, "notify.c.kind"),
        ({"alert": [{"on": ["failed"], "notify": ["ops"]}]}, "notifies ops, not a [notify.NAME] channel"),
        ({"notify": {"ops": WEBHOOK}, "alert": [{"on": ["exploded"], "notify": ["ops"]}]}, "alert.0.on.0"),
        ({"notify": {"ops": WEBHOOK}, "alert": [{"on": [], "notify": ["ops"]}]}, "alert.0.on"),
        (
            {"notify": {"ops": WEBHOOK}, "alert": [{"on": ["failed"], "notify": ["ops"], "x": 1}]},
            "unknown key",
        ),
    ],
)
def test_a_bad_channel_or_rule_is_refused_by_name(raw: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(raw)
    assert says in str(raised.value)
