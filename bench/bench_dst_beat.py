"""Celery beat against cronwright across the two DST nights of Europe/Berlin, under libfaketime (issue 36).

    python bench/bench_dst_beat.py [--speed N]

Each night, one `celery beat` (timezone "Europe/Berlin", enable_utc) and one `cronwright serve` (zone
Europe/Berlin, a `celery` target, one seed per schedule, SQLite) run side by side, each under libfaketime
from 00:30 local to 04:30 local, time running N times (120) faster, and send the same three schedules to a
queue of their own on the machine's RabbitMQ. This process (on the real clock) reads both queues with kombu:
no worker runs, so what is counted is exactly what each scheduler sent.

- beat's instant is its own fake clock when it published (a `before_task_publish` handler in the beat app
  adds it as a header); cronwright's is its `cronwright_scheduled_for` header.
- expected instants are cronie's rules (docs/dst.md): a time in the spring gap fires once at the first instant
  after it; a fixed time in the repeated hour fires once (its first copy); a wildcard or stepped hour follows
  real time (both copies of the repeated hour, none of the missing one).

The schedulers' sleeps run N times faster too: libfaketime 0.9.10 speeds the wall clock up, but with the
monotonic clock left real (FAKETIME_DONT_FAKE_MONOTONIC=1, else Python's timed waits hang) it fails
`time.sleep` (EINVAL) and leaves `Event.wait` at real durations. A sitecustomize loaded only by the two
schedulers divides every `time.sleep` and `Condition.wait` (hence `Event.wait`) by N. Not run in CI. Results
go to bench/results/dst-beat-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from kombu import Connection, Exchange, Queue

BENCH = Path(__file__).resolve().parent
TASKS = BENCH.parent / "tests" / "brokers"
BIN = Path(sys.executable).parent
RABBITMQ = "amqp://guest:guest@127.0.0.1:5672//"
BERLIN = ZoneInfo("Europe/Berlin")
LIBRARY = next(
    (
        str(path)
        for folder in (
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib",
            "/usr/local/lib",
        )
        if (path := Path(folder) / "faketime" / "libfaketime.so.1").exists()
    ),
    None,
)

# name: (celery crontab kwargs, cron expression)
SCHEDULES = {
    "daily-0230": ({"minute": 30, "hour": 2}, "30 2 * * *"),
    "hourly": ({"minute": 0, "hour": "*/1"}, "0 */1 * * *"),
    "daily-0315": ({"minute": 15, "hour": 3}, "15 3 * * *"),
}

# night: (first local wall instant, last), both in Europe/Berlin; the expected firings, per cronie's rules.
NIGHTS: dict[str, tuple[datetime, datetime, dict[str, list[str]]]] = {
    "spring-forward 2027-03-28": (
        datetime(2027, 3, 28, 0, 30, tzinfo=BERLIN),
        datetime(2027, 3, 28, 4, 30, tzinfo=BERLIN),
        {
            "daily-0230": ["2027-03-28T03:00:00+02:00"],
            "hourly": ["2027-03-28T01:00:00+01:00", "2027-03-28T03:00:00+02:00", "2027-03-28T04:00:00+02:00"],
            "daily-0315": ["2027-03-28T03:15:00+02:00"],
        },
    ),
    "fall-back 2027-10-31": (
        datetime(2027, 10, 31, 0, 30, tzinfo=BERLIN),
        datetime(2027, 10, 31, 4, 30, tzinfo=BERLIN),
        {
            "daily-0230": ["2027-10-31T02:30:00+02:00"],
            "hourly": [
                "2027-10-31T01:00:00+02:00",
                "2027-10-31T02:00:00+02:00",
                "2027-10-31T02:00:00+01:00",
                "2027-10-31T03:00:00+01:00",
                "2027-10-31T04:00:00+01:00",
            ],
            "daily-0315": ["2027-10-31T03:15:00+01:00"],
        },
    ),
}

SITECUSTOMIZE = """
import os, threading, time
SPEED = float(os.environ["CW_BENCH_SPEED"])
_never = threading.Lock()
_never.acquire()
def _sleep(seconds):
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    _never.acquire(timeout=seconds / SPEED)
time.sleep = _sleep
_wait = threading.Condition.wait
def _cond_wait(self, timeout=None):
    return _wait(self, None if timeout is None else timeout / SPEED)
threading.Condition.wait = _cond_wait
"""

BEAT_APP = """
import os
from datetime import datetime
from zoneinfo import ZoneInfo
from celery import Celery
from celery.schedules import crontab
from celery.signals import before_task_publish
app = Celery("dstbench", broker=os.environ["CW_BENCH_BROKER"])
app.conf.update(timezone="Europe/Berlin", enable_utc=True, task_serializer="json", accept_content=["json"],
                result_expires=None)  # else beat sends its celery.backend_cleanup to the "celery" queue
app.conf.beat_schedule = {
    name: {"task": "cw.record", "args": [name], "schedule": crontab(**kwargs),
           "options": {"queue": os.environ["CW_BENCH_QUEUE"]}}
    for name, kwargs in %r.items()
}
@before_task_publish.connect
def _stamp(headers=None, **_):
    # beat's own (fake) clock when it publishes: the instant it believed it fired
    headers["bench_sent_at"] = datetime.now(ZoneInfo("Europe/Berlin")).isoformat()
"""


def log(text: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {text}", file=sys.stderr, flush=True)


def faked(folder: Path, start: datetime, speed: int) -> dict[str, str]:
    """The environment of a scheduler under libfaketime from `start`, `speed` times faster."""
    assert LIBRARY is not None, "needs libfaketime (apt install faketime)"
    site = folder / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {
        **os.environ,
        "LD_PRELOAD": LIBRARY,
        "FAKETIME": f"@{start.astimezone(UTC):%Y-%m-%d %H:%M:%S} x{speed}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "TZ": "UTC",
        "CW_BENCH_SPEED": str(speed),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), str(folder), os.environ.get("PYTHONPATH")])),
    }


def cronwright_config(folder: Path, queue: str) -> Path:
    (folder / "secrets.env").write_text(f"FLEET_BROKER={RABBITMQ}\n")
    (folder / "secrets.env").chmod(0o600)
    seeds = "".join(
        f"""
[[seed]]
dedupe_key = "{name}"
name = "{name}"
target = "fleet"
action = "record"
args = {{ name = "{name}" }}
schedule = {{ cron = "{cron}" }}
"""
        for name, (_, cron) in SCHEDULES.items()
    )
    config = folder / "node.toml"
    # misfire_grace and the action's timeout are fake time: at N times faster, 1 h is 3600/N real seconds.
    config.write_text(
        f"""[node]
zone = "Europe/Berlin"
store = "sqlite:///{folder}/cw.db"
listen = "127.0.0.1:0"
secrets_file = "{folder}/secrets.env"
misfire_grace = "30m"

[targets.fleet]
kind = "celery"
broker_secret = "FLEET_BROKER"
timeout = "1h"

[targets.fleet.actions.record]
task = "cw.record"
queue = "{queue}"
positional = ["name"]
args_schema = {{ type = "object", properties = {{ name = {{ type = "string" }} }}, required = ["name"] }}
{seeds}"""
    )
    return config


def drain(connection: Connection, queue: Queue, into: list[dict[str, Any]]) -> None:
    with connection.channel() as channel:
        while (message := queue.bind(channel).get(no_ack=True)) is not None:
            headers = message.headers or {}
            into.append(
                {
                    "name": (message.decode()[0] or [None])[0],
                    "task_id": headers.get("id"),
                    "beat_sent_at": headers.get("bench_sent_at"),
                    "cronwright_scheduled_for": headers.get("cronwright_scheduled_for"),
                    "cronwright_fire_id": headers.get("cronwright_fire_id"),
                }
            )


def night(label: str, speed: int) -> dict[str, Any]:
    start, end, expected = NIGHTS[label]
    # in UTC: two aware datetimes of one tzinfo subtract as wall times, which is the very thing DST breaks
    real_seconds = (end.astimezone(UTC) - start.astimezone(UTC)).total_seconds() / speed
    sides: dict[str, Any] = {}
    tag = secrets.token_hex(4)
    queues = {side: f"cw-dst-{side}-{tag}" for side in ("beat", "cronwright")}
    declared = {
        side: Queue(name, Exchange(name, type="direct"), routing_key=name, durable=True)
        for side, name in queues.items()
    }
    with Connection(RABBITMQ) as connection, connection.channel() as channel:
        for queue in declared.values():
            queue.bind(channel).declare()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "beatapp.py").write_text(BEAT_APP % {n: kw for n, (kw, _) in SCHEDULES.items()})
        config = cronwright_config(folder, queues["cronwright"])
        env = faked(folder, start, speed)
        processes = []
        for side, argv, extra in (
            ("beat", [str(BIN / "celery"), "-A", "beatapp", "beat", "-s", str(folder / "beat-schedule"),
                      "--pidfile=", "-l", "info"], {"CW_BENCH_QUEUE": queues["beat"]}),
            ("cronwright", [str(BIN / "cronwright"), "--config", str(config), "serve"], {}),
        ):  # fmt: skip
            with (folder / f"{side}.log").open("wb") as out:
                processes.append(
                    subprocess.Popen(
                        argv,
                        cwd=folder,
                        env={**env, **extra, "CW_BENCH_BROKER": RABBITMQ},
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        log(f"{label}: beat and cronwright under faketime x{speed}, {real_seconds:.0f}s of real time")
        time.sleep(real_seconds)  # real time: the two schedulers run through the night for it
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        time.sleep(1)
        logs = {side: (folder / f"{side}.log").read_text(errors="replace") for side in queues}
        # a connection of its own, opened now: one left idle through the night is closed by the broker
        with Connection(RABBITMQ) as connection:
            for side, queue in declared.items():
                got: list[dict[str, Any]] = []
                drain(connection, queue, got)
                with connection.channel() as channel:
                    queue.bind(channel).delete()
                sides[side] = judged(side, got, expected)
                sides[side]["log_tail"] = logs[side][-3000:] if not got else logs[side][-600:]
                # what went wrong, if anything (a send that failed, a broker that went away), without the
                # node's notes that its wall clock runs ahead of its monotonic one, which is faketime's doing
                sides[side]["log_problems"] = [
                    line
                    for line in logs[side].splitlines()
                    if any(
                        level in line
                        for level in ('"level":"error"', '"level":"warning"', "ERROR", "WARNING")
                    )
                    and "wall clock jumped" not in line
                ][:20]
    return {"start": start.isoformat(), "end": end.isoformat(), "speed": speed, "sides": sides}


def judged(side: str, got: list[dict[str, Any]], expected: dict[str, list[str]]) -> dict[str, Any]:
    field = "beat_sent_at" if side == "beat" else "cronwright_scheduled_for"
    per: dict[str, Any] = {}
    for name, want in expected.items():
        fired = sorted(
            (datetime.fromisoformat(m[field]) for m in got if m["name"] == name and m[field]),
            key=lambda at: at.timestamp(),
        )
        local = [at.astimezone(BERLIN).isoformat(timespec="seconds") for at in fired]
        wanted = [datetime.fromisoformat(w) for w in want]
        # a firing matches an expected instant within 5 fake minutes (beat's stamp is its publish time)
        slack = timedelta(minutes=5)
        matched = Counter(
            next((w.isoformat() for w in wanted if abs(at - w) <= slack), "unexpected") for at in fired
        )
        per[name] = {
            "fired": local,
            "expected": want,
            "duplicates": sum(n - 1 for key, n in matched.items() if key != "unexpected" and n > 1),
            "unexpected": matched.get("unexpected", 0),
            "missed": sum(1 for w in wanted if matched.get(w.isoformat(), 0) == 0),
        }
    return {"messages": len(got), "schedules": per}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speed", type=int, default=120)
    parser.add_argument("--only", choices=["spring", "fall"])
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": {"cores": os.cpu_count(), "load": os.getloadavg()},
        "started": datetime.now(UTC).isoformat(),
        "nights": {},
    }
    for label in NIGHTS:
        if args.only and not label.startswith(args.only):
            continue
        results["nights"][label] = night(label, args.speed)
    results["load_after"] = os.getloadavg()
    out = BENCH / "results" / f"dst-beat-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    for label, found in results["nights"].items():
        for side, data in found["sides"].items():
            for name, row in data["schedules"].items():
                print(
                    f"{label:28} {side:10} {name:11} fired {', '.join(row['fired']) or '-'}"
                    f"  (dup {row['duplicates']}, unexpected {row['unexpected']}, missed {row['missed']})"
                )
    print(out)


if __name__ == "__main__":
    main()
