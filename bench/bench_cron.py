"""Next-firing computations per second: cronwright against croniter and bare cronsim.

One operation is "the first firing strictly after this instant, in this zone", over a fixed set of
expressions and zones, each from 64 instants of 2026 (seeded, with the DST changes of its zone among them):

- cronwright: `CronExpression.next_after(after, zone)` on an expression parsed once, as a stored job holds it;
- croniter: `croniter(expr, after_in_zone).get_next(datetime)`;
- cronsim: `next(CronSim(expr, after_in_zone))`, cronwright's own engine without its DST handling.

Each round times every library over the same operations, in turn; figures are medians over the rounds.
The answers are compared too: where a peer disagrees with cronwright, the count goes to the results JSON.

    python bench/bench_cron.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from common import Row, log, median, table
from croniter import croniter
from cronsim import CronSim

from cronwright.timing.cron import CronExpression

CASES = [
    ("*/5 * * * *", "UTC"),
    ("0 9 * * MON-FRI", "Europe/Berlin"),
    ("0 0 L * *", "UTC"),
    ("30 2 * * *", "Europe/Berlin"),
    ("0 */2 * * *", "Australia/Lord_Howe"),
    ("15 10 * * 5#3", "America/New_York"),
    ("0 0 29 2 *", "UTC"),
]
AFTERS = 64
EDGES = [  # instants just before the 2026 offset changes of the zones above
    datetime(2026, 3, 29, 0, 30, tzinfo=UTC),  # Berlin springs forward at 01:00Z
    datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # Berlin falls back at 01:00Z
    datetime(2026, 4, 4, 14, 30, tzinfo=UTC),  # Lord Howe falls back half an hour at 15:00Z
    datetime(2026, 10, 3, 15, 0, tzinfo=UTC),  # Lord Howe springs forward at 15:30Z
    datetime(2026, 3, 8, 6, 30, tzinfo=UTC),  # New York springs forward at 07:00Z
    datetime(2026, 11, 1, 5, 30, tzinfo=UTC),  # New York falls back at 06:00Z
]

Operation = tuple[str, ZoneInfo, CronExpression, datetime]


def operations() -> list[Operation]:
    rng = random.Random(5)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    found = []
    for text, zone_name in CASES:
        zone = ZoneInfo(zone_name)
        expression = CronExpression.parse(text)
        afters = [*EDGES]
        afters += [start + timedelta(seconds=rng.randrange(365 * 86400)) for _ in range(AFTERS - len(EDGES))]
        found += [(text, zone, expression, after) for after in afters]
    return found


def with_cronwright(op: Operation) -> datetime | None:
    _, zone, expression, after = op
    return expression.next_after(after, zone)


def with_croniter(op: Operation) -> datetime | None:
    text, zone, _, after = op
    fired: datetime = croniter(text, after.astimezone(zone)).get_next(datetime)
    return fired


def with_cronsim(op: Operation) -> datetime | None:
    text, zone, _, after = op
    fired: datetime = next(CronSim(text, after.astimezone(zone)))
    return fired


LIBRARIES: dict[str, Callable[[Operation], datetime | None]] = {
    "cronwright": with_cronwright,
    "croniter": with_croniter,
    "cronsim": with_cronsim,
}


def rows(rounds: int) -> list[Row]:
    ops = operations()
    rates: dict[str, list[float]] = {name: [] for name in LIBRARIES}
    answers: dict[str, list[datetime | None]] = {}
    for _ in range(rounds):
        for name, compute in LIBRARIES.items():
            began = time.perf_counter()
            answers[name] = [compute(op) for op in ops]
            rates[name].append(len(ops) / (time.perf_counter() - began))
    disagreements: dict[str, dict[str, int]] = {}
    for name in ("croniter", "cronsim"):
        for op, ours, theirs in zip(ops, answers["cronwright"], answers[name], strict=True):
            if ours != theirs:
                key = f"{op[0]} in {op[1].key}"
                disagreements.setdefault(name, {})[key] = disagreements.get(name, {}).get(key, 0) + 1
    ours = median(rates["cronwright"])
    log(
        f"cron: cronwright {ours:.0f}/s, croniter {median(rates['croniter']):.0f}/s, "
        f"cronsim {median(rates['cronsim']):.0f}/s; disagreements {disagreements}"
    )
    label = f"next firing, {len(CASES)} expressions x {AFTERS} instants"
    details: dict[str, Any] = {"cases": CASES, "operations": len(ops), "rounds": rounds}
    return [
        Row(
            label,
            "/s",
            "higher",
            ours,
            f"croniter {_version('croniter')}",
            median(rates["croniter"]),
            details={**details, "disagreements": disagreements.get("croniter", {})},
        ),
        Row(
            label,
            "/s",
            "higher",
            ours,
            f"cronsim {_version('cronsim')} (bare)",
            median(rates["cronsim"]),
            details={**details, "disagreements": disagreements.get("cronsim", {})},
        ),
    ]


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    found = rows(3 if options.quick else 9)
    print(table(found))
    for row in found:
        print(f"{row.peer} disagrees with cronwright on: {row.details['disagreements'] or 'nothing'}")


if __name__ == "__main__":
    main()
