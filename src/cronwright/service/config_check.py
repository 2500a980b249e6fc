"""What `cronwright check` finds in a config that validates and still cannot work (issue 35): a source
whose patterns allow no configured action, an alert rule whose target pattern matches none, and a
notification channel whose secrets are not set where the node will look for them.

Each problem is one sentence naming the config's own words (`[sources.agent] targets`), so the fix is
where the message says. Pure over what it is given: the config, the actions the registry allows, and
the secrets that resolve.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from fnmatch import fnmatchcase

from cronwright.config.settings import Config, NotifyConfig


def problems(config: Config, actions: Collection[str], secrets_set: Collection[str]) -> list[str]:
    """`actions` are the configured `target.action` pairs; `secrets_set`, the secret names that resolve."""
    found: list[str] = []
    for name, source in sorted(config.sources.items()):
        for pattern in source.targets:
            if not _any(pattern, actions):
                found.append(
                    f"[sources.{name}] targets: {pattern!r} matches no configured action"
                    f"{_known(actions)}: this source could never schedule it"
                )
    for index, rule in enumerate(config.alert):
        wanted = rule.match.target
        if wanted is not None and not _any(wanted, actions):
            found.append(
                f"[[alert]] #{index + 1} match.target: {wanted!r} matches no configured action"
                f"{_known(actions)}: the rule could never fire"
            )
    for name, channel in sorted(config.notify.items()):
        missing = [secret for secret in channel_secrets(channel) if secret not in secrets_set]
        if missing:
            where = "the environment" + (
                f" or {config.node.secrets_file}" if config.node.secrets_file else " (no secrets_file)"
            )
            found.append(
                f"[notify.{name}] names the secret{'s' if len(missing) > 1 else ''} {', '.join(missing)},"
                f" not set in {where}: its notifications could not be sent"
            )
    return found


def _any(pattern: str, actions: Iterable[str]) -> bool:
    return any(fnmatchcase(action, pattern) for action in actions)


def _known(actions: Collection[str]) -> str:
    shown = sorted(actions)[:6]
    more = ", ..." if len(actions) > len(shown) else ""
    return f" (there are: {', '.join(shown)}{more})" if shown else " (no actions are configured)"


def channel_secrets(channel: NotifyConfig) -> list[str]:
    """The secret names a notification channel needs at delivery."""
    named = [channel.signing_secret, channel.username, channel.password, *channel.url_secrets]
    return [secret for secret in named if secret]
