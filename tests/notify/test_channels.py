"""Each channel against a real receiver: a local HTTP server, a real SMTP server (aiosmtpd), and Apprise."""

from __future__ import annotations

import ssl
import time
from pathlib import Path

import httpx
import pytest

from cronwright.config.settings import parse
from cronwright.core.notifications import Transition
from cronwright.notify.channels import DeliveryFailed, EmailChannel, WebhookChannel, subject
from cronwright.notify.rules import Rule, notifications_for
from cronwright.notify.setup import channels_of
from cronwright.targets.secrets import Secrets

from .conftest import BERLIN, alert
from .receivers import SECRET, free_port, http_receiver
from .smtp_receiver import self_signed, smtp_server

SECRETS = Secrets(environ={"ALERT_SECRET": SECRET, "SMTP_USER": "cron", "SMTP_PASSWORD": "pw-123"})
# One client for the module: each new one builds an SSL context, which is slow on a busy machine.
CLIENT = httpx.Client()


def payload() -> dict[str, object]:
    [made] = notifications_for([Rule(on=frozenset(Transition), notify=("ops",))], alert(), BERLIN)
    return dict(made.payload)


def webhook(url: str, timeout: float = 5.0) -> WebhookChannel:
    return WebhookChannel("ops", url, "ALERT_SECRET", timeout, CLIENT, SECRETS)


def mail(
    port: int, username: str | None = None, password: str | None = None, tls: ssl.SSLContext | None = None
) -> EmailChannel:
    sender, to = "cw@example.invalid", ("ops@example.invalid",)
    return EmailChannel(
        "mail", f"smtp://127.0.0.1:{port}", sender, to, 5.0, SECRETS, username, password, tls=tls
    )


def test_a_webhook_is_signed_and_carries_the_notification_id() -> None:
    body = payload()
    with http_receiver() as receiver:
        webhook(receiver.url).send(body)
        webhook(receiver.url).send(body)  # a redelivery
    first, again = receiver.received
    assert first.verified and again.verified
    assert first.headers["x-cronwright-notification-id"] == body["id"]
    assert again.headers["x-cronwright-notification-id"] == body["id"]
    assert first.json() == body


def test_a_webhook_signed_with_another_secret_fails_the_receivers_check() -> None:
    with http_receiver(secret="not-the-one") as receiver:
        webhook(receiver.url).send(payload())
    assert [item.verified for item in receiver.received] == [False]


def test_a_webhook_that_answers_5xx_is_not_delivered() -> None:
    with http_receiver() as receiver:
        receiver.down = True
        with pytest.raises(DeliveryFailed, match="HTTP 503"):
            webhook(receiver.url).send(payload())


def test_a_webhook_nobody_listens_on_is_not_delivered() -> None:
    with pytest.raises(DeliveryFailed, match="ConnectError"):
        webhook(f"http://127.0.0.1:{free_port()}/alerts").send(payload())


def test_a_webhook_whose_secret_is_missing_fails_without_sending() -> None:
    channel = WebhookChannel("ops", "http://127.0.0.1:9/", "NOPE", 1.0, CLIENT, SECRETS)
    with pytest.raises(DeliveryFailed, match="secret NOPE not set"):
        channel.send(payload())


def test_an_email_names_the_transition_and_the_job_in_its_subject() -> None:
    body = payload()
    with smtp_server() as box:
        channel = mail(box.port)
        channel.send(body)
    [message] = box.messages
    assert message["Subject"] == "cronwright: failed: nightly-backup"
    assert message["To"] == "ops@example.invalid"
    assert message["Message-ID"] == f"<{body['id']}@cronwright>"
    assert "exit status 2" in message.get_payload()


def test_an_email_upgrades_with_starttls_and_logs_in_with_secrets(tmp_path: Path) -> None:
    server_tls, client_tls = self_signed(tmp_path)
    with smtp_server(credentials=("cron", "pw-123"), tls=server_tls) as box:
        channel = mail(box.port, "SMTP_USER", "SMTP_PASSWORD", tls=client_tls)
        channel.send(payload())
    assert box.logins == [("cron", "pw-123")]
    assert box.tls_used == [True]
    assert len(box.messages) == 1


def test_an_email_with_wrong_credentials_is_not_delivered(tmp_path: Path) -> None:
    server_tls, client_tls = self_signed(tmp_path)
    with smtp_server(credentials=("cron", "other"), tls=server_tls) as box:
        channel = mail(box.port, "SMTP_USER", "SMTP_PASSWORD", tls=client_tls)
        with pytest.raises(DeliveryFailed, match="SMTPAuthenticationError") as raised:
            channel.send(payload())
    assert "pw-123" not in str(raised.value)
    assert box.messages == []


def test_apprise_delivers_through_its_json_url_to_a_local_server() -> None:
    pytest.importorskip("apprise", reason="apprise (the optional extra) is not installed")
    config = parse({"notify": {"chat": {"kind": "apprise", "url_secrets": ["CHAT_URL"]}}})
    with http_receiver() as receiver:
        url = receiver.url.replace("http://", "json://")
        secrets = Secrets(environ={"CHAT_URL": url})
        channels_of(config, secrets)["chat"].send(payload())
    [got] = receiver.bodies()
    assert got["title"] == "cronwright: failed: nightly-backup"
    assert "exit status 2" in got["message"]


def test_a_digest_subject_counts_its_items() -> None:
    assert subject({"id": "d_1", "transition": "digest", "items": [{}, {}, {}]}) == (
        "cronwright: digest of 3 notifications"
    )


def test_a_channel_from_config_signs_with_the_named_secret() -> None:
    config = parse(
        {"notify": {"ops": {"kind": "webhook", "url": "http://x.invalid/", "signing_secret": "ALERT_SECRET"}}}
    )
    with http_receiver() as receiver:
        channel = channels_of(config, SECRETS, wall=time.time)["ops"]
        assert isinstance(channel, WebhookChannel)
        channel.url = receiver.url
        channel.send(payload())
    assert [item.verified for item in receiver.received] == [True]
