"""Deterministic jitter (semantic 32): each occurrence is delayed by an offset in [0, jitter).

The offset is a pure function of the job's id and the occurrence's nominal instant, through a unkeyed
BLAKE2b hash (never Python's `hash`, which is salted per process), so every node and every restart computes
the same one. It is capped below the gap to the next nominal instant, so a jittered occurrence always comes
before the next nominal one: jitter never reorders two occurrences, nor merges them into one.

Offsets are whole milliseconds: fine enough to spread a herd, and exact in every store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from hashlib import blake2b

from cronwright.errors import Invalid
from cronwright.timing.durations import parse_duration
from cronwright.timing.iso import as_utc

# A day of jitter already spreads any herd; a longer one would mostly be a mistaken unit.
MAX_JITTER = timedelta(days=1)
_MS = timedelta(milliseconds=1)
_MICRO = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_jitter(text: object, field: str = "jitter") -> timedelta:
    """Read a jitter duration ("5m", "PT30S"): at least 1ms and at most a day, or refuse with `Invalid`."""
    jitter = parse_duration(text, field)
    if jitter < _MS:
        raise Invalid(field, f"{field} {text!r} is under a millisecond: give at least '1ms', e.g. '30s'")
    if jitter > MAX_JITTER:
        raise Invalid(field, f"{field} {text!r} is more than a day: give at most '1d', e.g. '5m'")
    return jitter


def _unit(job_id: int, nominal: datetime) -> int:
    """A 64-bit number fixed by the job and the nominal instant (to the microsecond, in UTC)."""
    micros = (as_utc(nominal) - _EPOCH) // _MICRO
    digest = blake2b(f"cronwright-jitter:{job_id}:{micros}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def offset(job_id: int, nominal: datetime, jitter: timedelta, following: datetime | None) -> timedelta:
    """The delay of the occurrence due at `nominal`: in [0, jitter), and below `following - nominal`.

    `following` is the schedule's next nominal instant after `nominal` (None when there is none, and then
    only `jitter` bounds the offset). No jitter, or no room before `following`, is no delay.
    """
    bound = jitter
    if following is not None:
        bound = min(bound, as_utc(following) - as_utc(nominal))
    # Whole milliseconds strictly below the bound: n ms < bound for n in [0, ceil(bound / 1ms)).
    slots = -(-bound // _MS)
    if slots <= 1:
        return timedelta(0)
    return (_unit(job_id, nominal) % slots) * _MS


def jittered(job_id: int, nominal: datetime, jitter: timedelta, following: datetime | None) -> datetime:
    """The instant the occurrence due at `nominal` is scheduled for, jitter included, in UTC."""
    return as_utc(nominal) + offset(job_id, nominal, jitter, following)
