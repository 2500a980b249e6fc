"""Readers for the fields of a request: each value must already have its type; nothing is coerced."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cronwright.errors import Invalid

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def text(data: Mapping[str, Any], key: str, *, limit: int = 200, required: bool = True) -> str | None:
    """A string field. A number, list or map where a string belongs is refused, never coerced."""
    if key not in data or data[key] is None:
        if required:
            raise Invalid(key, f"'{key}' is required")
        return None
    value = data[key]
    if not isinstance(value, str):
        raise Invalid(key, f"'{key}' must be a string, not {type(value).__name__}")
    if not value.strip():
        raise Invalid(key, f"'{key}' must not be empty")
    if len(value.encode()) > limit:
        raise Invalid(key, f"'{key}' is longer than {limit} bytes")
    return value


def required_text(data: Mapping[str, Any], key: str, *, limit: int = 200) -> str:
    value = text(data, key, limit=limit)
    assert value is not None
    return value


def name(data: Mapping[str, Any], key: str = "name") -> str:
    value = required_text(data, key)
    if not NAME_PATTERN.fullmatch(value):
        raise Invalid(
            key,
            f"'{key}' {value!r} is not a valid name: use 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        )
    return value


def integer(data: Mapping[str, Any], key: str, low: int, high: int, default: int | None = None) -> int:
    if key not in data or data[key] is None:
        if default is None:
            raise Invalid(key, f"'{key}' is required")
        return default
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(key, f"'{key}' must be a whole number from {low} to {high}")
    if not low <= value <= high:
        raise Invalid(key, f"'{key}' must be from {low} to {high}, not {value}")
    return value


def flag(data: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Invalid(key, f"'{key}' must be true or false")
    return value


def mapping(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(key, f"'{key}' must be a JSON object")
    if not all(isinstance(k, str) for k in value):
        raise Invalid(key, f"every key of '{key}' must be a string")
    return value


def scalar_map(
    data: Mapping[str, Any], key: str, limit: int = 4096
) -> dict[str, str | int | float | bool | None]:
    """A flat map of scalars (for `origin`): a nested value, a non-finite number, or a map larger than
    `limit` bytes (it is stored with the job and shown in every row) is refused."""
    value = mapping(data, key)
    if len(repr(value)) > limit:
        raise Invalid(key, f"'{key}' is larger than {limit} bytes; keep it to a few short labels")
    for inner, item in value.items():
        if isinstance(item, float) and not math.isfinite(item):
            raise Invalid(key, f"'{key}.{inner}' must be a finite number")
        if not isinstance(item, str | int | float | bool) and item is not None:
            raise Invalid(key, f"'{key}.{inner}' must be a string, number, boolean or null")
    return value


def only(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    """Refuses keys the contract does not know, so a typo is reported rather than ignored."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise Invalid(
            unknown[0], f"{where} has no field '{unknown[0]}'; the fields are: {', '.join(sorted(allowed))}"
        )
