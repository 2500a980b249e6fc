"""IANA time zones: the only way a zone name enters cronwright.

A schedule's zone is stored by name and read back on every start, so a name must mean the same thing on every
node. That is why only IANA names are accepted: `localtime`, paths and POSIX TZ strings depend on the host.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, available_timezones

from cronwright.errors import Invalid

# Keys that zoneinfo can load but that name no place: they depend on the host or mean "unset".
_NOT_PLACES = frozenset({"localtime", "posixrules", "Factory"})
# The shape of an IANA key, checked before zoneinfo sees the name, so that no path reaches the filesystem.
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*")
_MAX_NAME = 64


@lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    # Scanning the tz database takes some milliseconds, so do it once per process.
    return frozenset(available_timezones()) - _NOT_PLACES


def _unknown(name: str) -> str:
    return f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin"


def zone(name: object, field: str = "tz") -> ZoneInfo:
    """The zone called `name`, or an `Invalid` refusal that says how to name one."""
    if not isinstance(name, str):
        raise Invalid(
            field,
            f"{field} must be a string naming a time zone, such as Europe/Berlin, not {type(name).__name__}",
        )
    if not name:
        raise Invalid(field, f"{field} is empty: use an IANA name such as Europe/Berlin")
    shown = name if len(name) <= _MAX_NAME else name[:_MAX_NAME] + "..."
    if len(name) > _MAX_NAME or not _KEY.fullmatch(name) or name not in _known():
        raise Invalid(field, _unknown(shown))
    try:
        return ZoneInfo(name)
    except (OSError, ValueError, KeyError) as exc:
        # Listed but unreadable (a damaged tz database): still the user's zone name that cannot be used.
        raise Invalid(field, _unknown(shown)) from exc


def _valid(name: str) -> str | None:
    try:
        zone(name)
    except Invalid:
        return None
    return name


def _from_zoneinfo_path(path: str) -> str | None:
    # /etc/localtime -> /usr/share/zoneinfo/Europe/Berlin: the key is what follows "zoneinfo/".
    marker = "zoneinfo/"
    at = path.rfind(marker)
    if at < 0:
        return None
    return _valid(path[at + len(marker) :])


def system_zone_name(
    *,
    environ: Mapping[str, str] | None = None,
    localtime: Path = Path("/etc/localtime"),
    timezone_file: Path = Path("/etc/timezone"),
) -> str:
    """The host's IANA zone name, used as the node zone when the config names none.

    Looks at $TZ (if it is an IANA name, with or without the leading ':'), then the /etc/localtime symlink,
    then /etc/timezone, and falls back to "UTC". The keyword arguments exist for tests.
    """
    env = os.environ if environ is None else environ
    tz = env.get("TZ", "").strip().removeprefix(":")
    if tz and (found := _valid(tz)) is not None:
        return found
    try:
        # Not resolve(): the link may point through other links, and the first "zoneinfo/" target is the name.
        found = _from_zoneinfo_path(os.readlink(localtime))
    except OSError:
        found = None
    if found is None:
        try:
            found = _from_zoneinfo_path(str(localtime.resolve(strict=True)))
        except (OSError, RuntimeError):
            found = None
    if found is not None:
        return found
    try:
        text = timezone_file.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    if text and (found := _valid(text)) is not None:
        return found
    return "UTC"
