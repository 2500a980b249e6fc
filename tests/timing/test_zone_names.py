"""Zones are IANA names, the same on every node; the node zone defaults to the host's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cronwright.errors import Invalid
from cronwright.timing.zones import system_zone_name, zone


@pytest.mark.parametrize("name", ["Europe/Berlin", "UTC", "Etc/GMT+5", "America/Argentina/Buenos_Aires"])
def test_iana_names_are_zones(name: str) -> None:
    assert str(zone(name)) == name


@pytest.mark.parametrize(
    "name",
    [
        "Mars/Olympus_Mons",
        "europe/berlin",
        "Europe",
        "localtime",
        "Factory",
        "/etc/localtime",
        "/usr/share/zoneinfo/Europe/Berlin",
        "../../etc/passwd",
        "Europe/../Europe/Berlin",
        "Europe//Berlin",
        "Europe/Berlin\x00",
        "CET-1CEST",
        "Europe/Berlin " * 10,
    ],
)
def test_other_names_are_refused_with_a_hint(name: str) -> None:
    with pytest.raises(Invalid) as caught:
        zone(name)
    assert caught.value.field == "tz"
    assert caught.value.message.startswith("unknown time zone '")
    assert caught.value.message.endswith("use an IANA name such as Europe/Berlin")


@pytest.mark.parametrize("value", [None, 5, [], {}, ["Europe/Berlin"]])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(Invalid, match="must be a string") as caught:
        zone(value, field="schedule.tz")
    assert caught.value.field == "schedule.tz"


def test_empty_is_refused() -> None:
    with pytest.raises(Invalid, match="is empty"):
        zone("")


def _link(tmp_path: Path, target: str) -> Path:
    link = tmp_path / "localtime"
    os.symlink(target, link)
    return link


def test_system_zone_prefers_an_iana_tz_variable(tmp_path: Path) -> None:
    link = _link(tmp_path, "/usr/share/zoneinfo/America/Havana")
    assert system_zone_name(environ={"TZ": "Europe/Berlin"}, localtime=link) == "Europe/Berlin"
    assert system_zone_name(environ={"TZ": ":Asia/Tokyo"}, localtime=link) == "Asia/Tokyo"


def test_system_zone_falls_back_to_the_localtime_link(tmp_path: Path) -> None:
    link = _link(tmp_path, "/usr/share/zoneinfo/America/Havana")
    missing = tmp_path / "timezone"
    assert (
        system_zone_name(environ={"TZ": "CET-1CEST"}, localtime=link, timezone_file=missing)
        == "America/Havana"
    )
    assert system_zone_name(environ={}, localtime=link, timezone_file=missing) == "America/Havana"


def test_system_zone_falls_back_to_etc_timezone(tmp_path: Path) -> None:
    timezone_file = tmp_path / "timezone"
    timezone_file.write_text("Australia/Lord_Howe\n")
    assert (
        system_zone_name(environ={}, localtime=tmp_path / "missing", timezone_file=timezone_file)
        == "Australia/Lord_Howe"
    )


def test_system_zone_is_utc_when_nothing_names_one(tmp_path: Path) -> None:
    timezone_file = tmp_path / "timezone"
    timezone_file.write_text("not a zone\n")
    link = _link(tmp_path, "/nowhere/at/all")
    assert (
        system_zone_name(environ={"TZ": "Nowhere/Else"}, localtime=link, timezone_file=timezone_file) == "UTC"
    )


def test_system_zone_of_this_host_is_a_zone() -> None:
    assert str(zone(system_zone_name())) == system_zone_name()
