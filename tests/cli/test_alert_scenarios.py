"""Semantic 38, black-box: the real binary under faketime, a real SQLite file (or PostgreSQL), and real
receivers (a local HTTP server that checks each signature and idempotency key; aiosmtpd for email).

Each `at=` is the instant the cronwright process starts at. The receivers run in this test's process, on the
real clock, so a webhook's signature is checked against the instant the sender believed it was.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from notify.receivers import SECRET, Receiver, http_receiver

from .blackbox import Cronwright, needs_faketime, utc, wait_for

pytestmark = needs_faketime


def with_alerts(cw: Cronwright, receiver: Receiver, on: list[str], extra: str = "") -> None:
    """The node's config plus a webhook channel to `receiver`, a rule for `on`, and a `flaky` action that
    fails while the file `flaky.fail` exists."""
    (cw.folder / "secrets.env").write_text(f"ALERT_SECRET={SECRET}\n", encoding="utf-8")
    (cw.folder / "secrets.env").chmod(0o600)
    flag = shlex.quote(str(cw.folder / "flaky.fail"))
    script = f"if [ -e {flag} ]; then echo failing on purpose; exit 1; fi"
    text = cw.config.read_text(encoding="utf-8").replace(
        "[node]\n", '[node]\nsecrets_file = "secrets.env"\n', 1
    )
    text += f"""
[targets.sh.actions.flaky]
argv = ["/bin/sh", "-c", {_quoted(script)}]
timeout = "1m"

[notify.ops]
kind = "webhook"
url = "{receiver.url}"
signing_secret = "ALERT_SECRET"
timeout = "5s"

[[alert]]
on = {_list(on)}
notify = ["ops"]
{extra}"""
    cw.config.write_text(text, encoding="utf-8")


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


@contextmanager
def receiving() -> Iterator[Receiver]:
    with http_receiver() as receiver:
        yield receiver


def at_clock(receiver: Receiver, instant: str) -> None:
    """Signatures made by a process started at `instant` are checked against that instant (give or take
    the tolerance, which covers the seconds the process runs)."""
    moment = utc(instant).timestamp()
    receiver.clock = lambda: moment


def delivered(receiver: Receiver) -> list[tuple[str, str | None]]:
    bodies: list[dict[str, Any]] = receiver.bodies()
    return [(body["transition"], (body.get("job") or {}).get("name")) for body in bodies]


def check_envelopes(receiver: Receiver) -> None:
    """Every delivery was signed, and carried its idempotency key in the header and the body alike."""
    assert receiver.received, "nothing was delivered"
    for got in receiver.received:
        assert got.verified, got.headers
        assert got.headers["x-cronwright-notification-id"] == got.json()["id"]


def tick(cw: Cronwright, receiver: Receiver, instant: str) -> dict[str, Any]:
    at_clock(receiver, instant)
    return cw.tick(at=instant)


def test_a_job_failing_twice_alerts_failed_once_then_recovered_once(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["failed", "recovered"])
        cw.add(
            "flaky", "--cron", "0 * * * *", "--breaker", "0", action="flaky", at="2026-03-02T09:59:30+01:00"
        )
        (cw.folder / "flaky.fail").touch()

        assert tick(cw, receiver, "2026-03-02T10:00:05+01:00")["fired"] == 1
        assert delivered(receiver) == [("failed", "flaky")]
        assert tick(cw, receiver, "2026-03-02T11:00:05+01:00")["fired"] == 1  # fails again: no transition
        assert delivered(receiver) == [("failed", "flaky")]
        (cw.folder / "flaky.fail").unlink()
        assert tick(cw, receiver, "2026-03-02T12:00:05+01:00")["fired"] == 1
        assert tick(cw, receiver, "2026-03-02T13:00:05+01:00")["fired"] == 1  # ok again: no transition

    assert delivered(receiver) == [("failed", "flaky"), ("recovered", "flaky")]
    check_envelopes(receiver)
    failed, recovered = receiver.bodies()
    assert failed["scheduled_for"] == "2026-03-02T10:00:00+01:00" and failed["at"].startswith(
        "2026-03-02T10:00"
    )
    assert "failing on purpose" in failed["message"] or failed["message"].startswith("error")
    assert recovered["scheduled_for"] == "2026-03-02T12:00:00+01:00" and failed["id"] != recovered["id"]
    # `notifications` shows both, delivered on their first attempt, newest first.
    rows = cw.json("notifications", at="2026-03-02T13:05:00+01:00")["deliveries"]
    assert [(row["transition"], row["state"], row["attempts"], row["id"]) for row in rows] == [
        ("recovered", "delivered", 1, recovered["id"]),
        ("failed", "delivered", 1, failed["id"]),
    ]
    assert rows[1]["delivered_at"].startswith("2026-03-02T10:00") and rows[1]["next_attempt_at"] is None


def test_a_node_down_across_an_occurrence_alerts_missed_at_boot(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["missed"])
        cw.add("daily", "--cron", "0 10 * * *", at="2026-03-02T09:59:30+01:00")
        # No tick on Monday or Tuesday at 10:00 (the host was down); Wednesday's 10:00 is on time.
        report = tick(cw, receiver, "2026-03-04T10:00:05+01:00")

    assert (report["fired"], report["skipped"]) == (1, 2)
    assert delivered(receiver) == [("missed", "daily")]
    check_envelopes(receiver)
    [missed] = receiver.bodies()
    assert missed["scheduled_for"] == "2026-03-02T10:00:00+01:00"
    assert missed["message"].startswith("2 occurrences did not start within misfire_grace")


def test_the_breaker_alerts_when_it_pauses_a_failing_job(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["failed", "breaker_paused"])
        cw.add("bad", "--cron", "0 * * * *", "--breaker", "2", action="fail", at="2026-03-02T09:59:30+01:00")
        tick(cw, receiver, "2026-03-02T10:00:05+01:00")
        tick(cw, receiver, "2026-03-02T11:00:05+01:00")
        assert tick(cw, receiver, "2026-03-02T12:00:05+01:00")["fired"] == 0  # paused

    assert delivered(receiver) == [("failed", "bad"), ("breaker_paused", "bad")]
    check_envelopes(receiver)
    assert cw.show("bad", at="2026-03-02T12:01:00+01:00")["job"]["paused_by"] == "breaker"


def test_a_receiver_that_is_down_gets_the_notification_from_a_later_tick_exactly_once(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["failed"])
        cw.add("bad", "--every", "1h", "--breaker", "0", action="fail", at="2026-03-02T09:00:00+01:00")
        receiver.down = True
        tick(cw, receiver, "2026-03-02T10:00:05+01:00")  # fails; the receiver answers 503
        tick(cw, receiver, "2026-03-02T10:30:05+01:00")  # nothing due; the retry fails again
        receiver.down = False
        tick(cw, receiver, "2026-03-02T10:45:05+01:00")
        tick(cw, receiver, "2026-03-02T10:50:05+01:00")

    assert delivered(receiver) == [("failed", "bad")]
    check_envelopes(receiver)


def test_a_receiver_that_is_down_shows_as_pending_with_its_error_and_next_try(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["failed"])
        cw.add("bad", "--every", "1h", "--breaker", "0", action="fail", at="2026-03-02T09:00:00+01:00")
        receiver.down = True
        tick(cw, receiver, "2026-03-02T10:00:05+01:00")
        [row] = cw.json("notifications", at="2026-03-02T10:00:30+01:00")["deliveries"]
        table = cw.ok("notifications", at="2026-03-02T10:00:30+01:00").stdout

    assert (row["state"], row["attempts"], row["transition"]) == ("pending", 1, "failed")
    assert row["last_error"].endswith("answered HTTP 503") and row["next_attempt_at"] > row["created_at"]
    assert "CHANNEL" in table and "pending" in table and "HTTP 503" in table


def test_notify_test_sends_through_a_channel_and_says_what_happened(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["failed"])
        at_clock(receiver, "2026-03-02T10:00:00+01:00")
        sent = cw.run("notify-test", "ops", at="2026-03-02T10:00:00+01:00")
        receiver.down = True
        refused = cw.run("notify-test", "ops", at="2026-03-02T10:00:00+01:00")
        unknown = cw.run("notify-test", "nope", at="2026-03-02T10:00:00+01:00")

    assert sent.rc == 0 and sent.stdout.startswith("delivered a test notification (t_"), sent
    [body] = receiver.bodies()
    assert (body["transition"], body["job"]) == ("test", None)
    assert body["at"].startswith("2026-03-02T10:00:0")  # the clock runs on from the start instant
    check_envelopes(receiver)
    assert refused.rc == 1 and "ops (webhook) did not take the test notification" in refused.stderr
    assert "HTTP 503" in refused.stderr
    assert unknown.rc == 2 and "no channel named 'nope'; the channels are: ops" in unknown.stderr


def test_an_email_alert_arrives_at_a_real_smtp_server(cw: Cronwright) -> None:
    from notify.smtp_receiver import smtp_server

    with receiving() as receiver, smtp_server() as mailbox:
        with_alerts(
            cw,
            receiver,
            ["breaker_paused"],
            extra=f"""
[notify.mail]
kind = "email"
smtp = "smtp://127.0.0.1:{mailbox.port}"
from = "cronwright@example.invalid"
to = ["ops@example.invalid"]

[[alert]]
on = ["failed"]
notify = ["mail"]
""",
        )
        cw.add("bad", "--cron", "0 * * * *", action="fail", at="2026-03-02T09:59:30+01:00")
        tick(cw, receiver, "2026-03-02T10:00:05+01:00")

    [message] = mailbox.messages
    assert message["Subject"] == "cronwright: failed: bad"
    assert (message["From"], message["To"]) == ("cronwright@example.invalid", "ops@example.invalid")
    assert message["Message-ID"].startswith("<n_")
    assert '"transition": "failed"' in message.get_payload()
    assert receiver.bodies() == []  # the webhook's rule takes breaker_paused only


def test_every_slot_busy_past_the_grace_alerts_late(tmp_path: Path) -> None:
    # A grace long enough for the process to start (a loaded machine takes seconds) and fire `long` on time.
    cw = Cronwright(tmp_path, max_concurrency=1, misfire_grace="30s", lease_beat="1s", lease_ttl="4s")
    with receiving() as receiver:
        with_alerts(cw, receiver, ["late", "missed"])
        cw.add("long", "--cron", "0 10 * * *", action="slow", at="2026-03-02T09:59:00+01:00")
        cw.add("waits", "--cron", "0 10 * * *", at="2026-03-02T09:59:00+01:00")
        at_clock(receiver, "2026-03-02T10:00:01+01:00")
        with cw.popen("tick", "--json", at="2026-03-02T10:00:01+01:00") as ticking:
            try:
                # `long` holds the only slot; `waits` finds none, and its grace runs out while it waits.
                wait_for("the late occurrence to be noted", lambda: _noted(cw, "late"), timeout=90)
            finally:
                cw.release.touch()
            out, err = ticking.communicate(timeout=60)
        assert ticking.returncode == 0, err

    assert delivered(receiver) == [("late", "waits")]
    check_envelopes(receiver)
    [late] = receiver.bodies()
    assert late["scheduled_for"] == "2026-03-02T10:00:00+01:00"
    assert (json.loads(out)["fired"], json.loads(out)["skipped"]) == (1, 1)


def _noted(cw: Cronwright, transition: str) -> bool:
    reply = cw.run("notifications", "--json")
    return reply.rc == 0 and any(row["transition"] == transition for row in reply.json()["deliveries"])


def test_a_flood_of_failures_reaches_the_receiver_as_one_digest(cw: Cronwright) -> None:
    with receiving() as receiver:
        with_alerts(cw, receiver, ["failed"])
        for index in range(12):
            cw.add(f"bad-{index:02}", "--cron", "0 10 * * *", action="fail", at="2026-03-02T09:59:00+01:00")
        assert tick(cw, receiver, "2026-03-02T10:00:05+01:00")["fired"] == 12

    [digest] = receiver.bodies()
    assert digest["transition"] == "digest" and len(digest["items"]) == 12
    assert sorted(item["job"]["name"] for item in digest["items"]) == [
        f"bad-{index:02}" for index in range(12)
    ]
    assert {item["transition"] for item in digest["items"]} == {"failed"}
    check_envelopes(receiver)
    rows = cw.json("notifications", "--limit", "100", at="2026-03-02T10:01:00+01:00")["deliveries"]
    assert sorted(row["state"] for row in rows) == ["delivered"] + ["digested"] * 12
