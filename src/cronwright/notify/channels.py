"""Channels: where notifications go. Each `send` delivers one body or raises DeliveryFailed.

- `webhook`: POSTs the JSON body, signed exactly like an http target (`X-Cronwright-Signature`, see
  cronwright.targets.http), with `X-Cronwright-Notification-Id` equal to the body's `id`, so a receiver can
  drop a redelivery. A 2xx answer is delivered; anything else, or no answer within the timeout, is retried.
- `email`: one message per notification over SMTP (standard library). `smtp://` upgrades with STARTTLS
  whenever the server offers it; `smtps://` speaks TLS from the start. Credentials are secrets, by name.
- `apprise`: Slack, Telegram, ntfy, PagerDuty and the rest through the Apprise library (the optional extra
  `cronwright[apprise]`), imported only when such a channel sends.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from cronwright._version import __version__
from cronwright.errors import CronwrightError
from cronwright.targets.http import SIGNATURE_HEADER, sign
from cronwright.targets.secrets import SecretMissing, Secrets

if TYPE_CHECKING:
    import smtplib
    import ssl

    import httpx

NOTIFICATION_ID_HEADER = "X-Cronwright-Notification-Id"


class DeliveryFailed(CronwrightError):
    """The channel did not accept the notification; the message says why and names no secret."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Channel(Protocol):
    name: str

    def send(self, payload: Mapping[str, Any]) -> None:
        """Delivers `payload` once, or raises DeliveryFailed."""


def encoded(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def subject(payload: Mapping[str, Any]) -> str:
    """`cronwright: failed: nightly-backup` (semantic 38: the subject names the transition and the job)."""
    transition = str(payload.get("transition"))
    if transition == "digest":
        return f"cronwright: digest of {len(payload.get('items') or [])} notifications"
    job = payload.get("job")
    named = job.get("name") if isinstance(job, Mapping) else None
    return f"cronwright: {transition}" + (f": {named}" if named else "")


def text(payload: Mapping[str, Any]) -> str:
    """A readable body: the message (each item's, for a digest), then the JSON body itself."""
    items = payload.get("items") if payload.get("transition") == "digest" else [payload]
    lines = [
        f"{item.get('at')} {item.get('transition')} {(item.get('job') or {}).get('name', '')}: "
        f"{item.get('message', '')}".replace("  ", " ")
        for item in items or []
        if isinstance(item, Mapping)
    ]
    return "\n".join([*lines, "", json.dumps(payload, ensure_ascii=False, indent=2)]) + "\n"


@dataclass
class WebhookChannel:
    name: str
    url: str
    signing_secret: str  # a secret's name, resolved at each send so that a rotation needs no restart
    timeout: float
    client: httpx.Client
    secrets: Secrets
    wall: Callable[[], float] = time.time

    def send(self, payload: Mapping[str, Any]) -> None:
        import httpx  # here: a node with no webhook channel never pays for its import

        data = encoded(payload)
        try:
            secret = self.secrets.resolve([self.signing_secret])[self.signing_secret]
        except SecretMissing as error:
            raise DeliveryFailed(f"channel {self.name}: {error}") from None
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"cronwright/{__version__}",
            SIGNATURE_HEADER: sign(secret, data, int(self.wall())),
            NOTIFICATION_ID_HEADER: str(payload["id"]),
        }
        try:
            response = self.client.post(self.url, content=data, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException:
            raise DeliveryFailed(f"POST {self.url} got no answer within {self.timeout:g}s") from None
        except httpx.HTTPError as error:
            raise DeliveryFailed(f"POST {self.url} failed: {type(error).__name__}: {error}") from None
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"POST {self.url} answered HTTP {response.status_code}")


@dataclass
class EmailChannel:
    name: str
    smtp: str
    sender: str
    to: tuple[str, ...]
    timeout: float
    secrets: Secrets
    username: str | None = None  # secret names, resolved at each send
    password: str | None = None
    tls: ssl.SSLContext | None = None  # None: the system's trusted CAs, with the host name checked

    def send(self, payload: Mapping[str, Any]) -> None:
        # Imported here, as httpx for webhooks: a node with no email channel never pays for them.
        import smtplib
        from email.message import EmailMessage

        message = EmailMessage()
        message["Subject"] = subject(payload)
        message["From"] = self.sender
        message["To"] = ", ".join(self.to)
        message["Message-ID"] = f"<{payload['id']}@cronwright>"  # the same on a redelivery
        message.set_content(text(payload))
        try:
            with self._connect() as server:
                self._login(server)
                server.send_message(message)
        except (smtplib.SMTPException, OSError) as error:
            raise DeliveryFailed(f"SMTP {self._where()} failed: {type(error).__name__}: {error}") from None

    def _where(self) -> str:
        parts = urlsplit(self.smtp)
        return f"{parts.scheme}://{parts.hostname}:{parts.port or _default_port(parts.scheme)}"

    def _connect(self) -> smtplib.SMTP:
        import smtplib

        parts = urlsplit(self.smtp)
        host, port = parts.hostname or "localhost", parts.port or _default_port(parts.scheme)
        if parts.scheme == "smtps":
            return smtplib.SMTP_SSL(host, port, timeout=self.timeout, context=self._tls())
        server = smtplib.SMTP(host, port, timeout=self.timeout)
        server.ehlo()
        if server.has_extn("starttls"):
            server.starttls(context=self._tls())
            server.ehlo()
        return server

    def _tls(self) -> ssl.SSLContext:
        import ssl

        return self.tls or ssl.create_default_context()

    def _login(self, server: smtplib.SMTP) -> None:
        names = [name for name in (self.username, self.password) if name]
        if not names:
            return
        try:
            values = self.secrets.resolve(names)
        except SecretMissing as error:
            raise DeliveryFailed(f"channel {self.name}: {error}") from None
        server.login(values[self.username or ""] if self.username else "", values[self.password or ""])


def _default_port(scheme: str) -> int:
    return 465 if scheme == "smtps" else 25


@dataclass
class AppriseChannel:
    name: str
    urls: tuple[str, ...]  # Apprise URLs; they often hold tokens, so they come from secrets when named so
    secrets: Secrets
    url_secrets: tuple[str, ...] = ()

    def send(self, payload: Mapping[str, Any]) -> None:
        try:
            import apprise  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            raise DeliveryFailed(
                "the apprise channel needs the Apprise library: pip install 'cronwright[apprise]'"
            ) from None
        with warnings.catch_warnings():
            # Apprise loads its plugins on first use, and one imports the deprecated `imghdr`: its
            # business, not a fault of this send (nor an error under `-W error`).
            warnings.simplefilter("ignore", DeprecationWarning)
            self._send(apprise, payload)

    def _send(self, apprise: Any, payload: Mapping[str, Any]) -> None:
        sender = apprise.Apprise()
        try:
            urls = [*self.urls, *self.secrets.resolve(self.url_secrets).values()]
        except SecretMissing as error:
            raise DeliveryFailed(f"channel {self.name}: {error}") from None
        for url in urls:
            if not sender.add(url):
                raise DeliveryFailed(f"channel {self.name}: apprise does not understand one of its urls")
        if not sender.notify(title=subject(payload), body=text(payload)):
            raise DeliveryFailed(f"channel {self.name}: apprise could not deliver to every url")
