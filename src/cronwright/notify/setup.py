"""The channels and rules of a config: `[notify.NAME]` and `[[alert]]` made into objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cronwright.notify.rules import Rule

if TYPE_CHECKING:
    import httpx

    from cronwright.config.settings import Config, NotifyConfig
    from cronwright.notify.channels import Channel
    from cronwright.targets.secrets import Secrets


def rules_of(config: Config) -> tuple[Rule, ...]:
    return tuple(
        Rule(
            on=frozenset(rule.on),
            notify=tuple(rule.notify),
            target=rule.match.target,
            source=rule.match.source,
            name=rule.match.name,
        )
        for rule in config.alert
    )


def channels_of(
    config: Config,
    secrets: Secrets,
    client: httpx.Client | None = None,
    wall: Callable[[], float] | None = None,
) -> dict[str, Channel]:
    """Every configured channel. Secrets are resolved at each send (`check` reports a missing one)."""
    import httpx  # here: a config with no channel never pays for its import

    shared = client or httpx.Client(follow_redirects=False)
    return {name: _channel(name, spec, secrets, shared, wall) for name, spec in config.notify.items()}


def _channel(
    name: str, spec: NotifyConfig, secrets: Secrets, client: httpx.Client, wall: Callable[[], float] | None
) -> Channel:
    # Here: every node reads its rules from this module, and a config with no channel never sends.
    from cronwright.notify.channels import AppriseChannel, EmailChannel, WebhookChannel

    timeout = spec.timeout.total_seconds()
    if spec.kind == "webhook":
        assert spec.url is not None and spec.signing_secret is not None
        channel = WebhookChannel(name, spec.url, spec.signing_secret, timeout, client, secrets)
        if wall is not None:
            channel.wall = wall
        return channel
    if spec.kind == "email":
        assert spec.smtp is not None and spec.sender is not None
        return EmailChannel(
            name, spec.smtp, spec.sender, tuple(spec.to), timeout, secrets, spec.username, spec.password
        )
    urls = tuple(([spec.url] if spec.url else []) + spec.urls)
    return AppriseChannel(name, urls, secrets, tuple(spec.url_secrets))
