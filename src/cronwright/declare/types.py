"""The field types of the protocol's models: the shape of each value, strictly, and its JSON Schema.

Each type checks exactly what its JSON Schema says, so that a request the schema refuses is refused by the
server, and the other way round, wherever JSON Schema can say it (a length in bytes it cannot: see `text`).
Nothing is coerced: a number where a string belongs, or a string where a number belongs, is refused.

A refusal is a `PydanticCustomError` whose message follows the field's name ("must be a string, not int");
`declare.refusals` puts the name in front and turns it into the protocol's `invalid` refusal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
# A string that is not blank holds one character outside this class: the characters Python's str.isspace()
# calls whitespace, spelled out. `\S` would say less than it seems: a validator reading the pattern over
# ASCII (as ECMA-262 engines and schemathesis do) takes "\x1d" or "\x85" for a character, where Python
# takes it for a space, so a value the document admits was refused as blank. Escapes only, read alike by
# Python's re and by ECMA-262, so that the document and the server apply one rule.
NOT_BLANK_PATTERN = r"[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_NOT_BLANK = re.compile(NOT_BLANK_PATTERN)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


@dataclass(frozen=True)
class Checked:
    """The metadata of a field type (`Annotated[str, Checked(...)]`): the function that checks a value,
    and the JSON Schema that says the same."""

    check: Callable[[Any], Any]
    schema: dict[str, Any] = field(hash=False)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(self.check)

    def __get_pydantic_json_schema__(
        self, core: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return dict(self.schema)


def _kind(value: object) -> str:
    """A JSON type's name, as a caller wrote the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _refuse(error_type: str, message: str, **context: Any) -> PydanticCustomError:
    return PydanticCustomError(error_type, message, context)


def _check_text(limit: int, blank: bool = False) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str):
            raise _refuse("text_type", "must be a string, not {kind}", kind=_kind(value))
        if not blank and _NOT_BLANK.search(value) is None:
            raise _refuse("text_blank", "must not be empty")
        if len(value.encode("utf-8", "surrogatepass")) > limit:
            raise _refuse("text_long", "is longer than {limit} bytes", limit=limit)
        return value

    return check


def text(limit: int = 200, blank: bool = False, **schema: Any) -> Checked:
    """A string that holds at most `limit` bytes of UTF-8, and is not blank unless `blank`.

    JSON Schema counts characters, not bytes: the schema's maxLength is `limit` characters, which every
    string of `limit` bytes or fewer meets, so the schema never refuses what the server accepts."""
    shape = {"type": "string", "maxLength": limit, **schema}
    if not blank:
        shape.update(minLength=1, pattern=NOT_BLANK_PATTERN)
    return Checked(_check_text(limit, blank), shape)


def one_or_more(limit: int, most: int, **schema: Any) -> Checked:
    """A string (as `text(limit)`), or a list of 1 to `most` of them: a cron schedule's expressions."""
    one = _check_text(limit)

    def check(value: object) -> str | list[str]:
        if not isinstance(value, list):
            if not isinstance(value, str):
                raise _refuse("texts_type", "must be a string or a list of strings, not {kind}",
                              kind=_kind(value))  # fmt: skip
            return one(value)
        if not 1 <= len(value) <= most:
            raise _refuse("texts_count", "must list 1 to {most} strings, not {count}", most=most,
                          count=len(value))  # fmt: skip
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise _refuse("texts_item", "[{index}] must be a string, not {kind}", index=index,
                              kind=_kind(item))  # fmt: skip
            one(item)
        return value

    single = {"type": "string", "maxLength": limit, "minLength": 1, "pattern": NOT_BLANK_PATTERN}
    several = {"type": "array", "items": single, "minItems": 1, "maxItems": most}
    return Checked(check, {"anyOf": [single, several], **schema})


def texts(limit: int, most: int, **schema: Any) -> Checked:
    """A list of 0 to `most` strings, each as `text(limit)` (a schedule's calendar names)."""
    one = _check_text(limit)

    def check(value: object) -> list[str]:
        if not isinstance(value, list):
            raise _refuse("list_type", "must be a list of strings, not {kind}", kind=_kind(value))
        if len(value) > most:
            raise _refuse(
                "list_long", "lists {count} names: give at most {most}", count=len(value), most=most
            )
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise _refuse(
                    "list_item", "[{index}] must be a string, not {kind}", index=index, kind=_kind(item)
                )
            one(item)
        return value

    single = {"type": "string", "maxLength": limit, "minLength": 1, "pattern": NOT_BLANK_PATTERN}
    return Checked(check, {"type": "array", "items": single, "maxItems": most, **schema})


def _check_name(value: object) -> str:
    checked = _check_text(200)(value)
    if not (len(checked) <= 100 and checked[0].isascii() and checked[0].isalnum()) or not set(checked) <= (
        _NAME_CHARS
    ):
        raise _refuse(
            "name_pattern",
            "{value} is not a valid name: use 1-100 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit",
            value=repr(checked[:120]),
        )
    return checked


# A schedule's own name, as create and a rename give it.
Name = Annotated[str, Checked(_check_name, {"type": "string", "pattern": NAME_PATTERN})]


def whole(low: int, high: int) -> Checked:
    """A whole number from `low` to `high`. A boolean, a float (even 2.0) or a string is refused."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _refuse(
                "whole_type", "must be a whole number from {low} to {high}, not {kind}", low=low, high=high,
                kind=_kind(value),
            )  # fmt: skip
        if not low <= value <= high:
            raise _refuse(
                "whole_range", "must be from {low} to {high}, not {value}", low=low, high=high,
                value=value if abs(value) < 10**30 else "a number that long",
            )  # fmt: skip
        return value

    return Checked(check, {"type": "integer", "minimum": low, "maximum": high})


def choice(*values: str) -> Checked:
    """One of `values`, exactly (case matters)."""
    listed = ", ".join(repr(v) for v in values)

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise _refuse("choice_type", "must be a string, one of {listed}", listed=listed)
        if value not in values:
            raise _refuse(
                "choice", "must be one of {listed}, not {value}", listed=listed, value=repr(value[:50])
            )
        return value

    return Checked(check, {"type": "string", "enum": list(values)})


def _check_flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise _refuse("flag_type", "must be true or false, not {kind}", kind=_kind(value))
    return value


Flag = Annotated[bool, Checked(_check_flag, {"type": "boolean"})]


def _check_object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _refuse("object_type", "must be a JSON object, not {kind}", kind=_kind(value))
    return value


# A JSON object of any content (an action's args: the target's own schema checks them).
Object = Annotated[dict[str, Any], Checked(_check_object, {"type": "object"})]


def _check_labels(value: object) -> dict[str, Any]:
    labels = _check_object(value)
    for key, item in labels.items():
        scalar = (
            item is None
            or isinstance(item, str | bool | int)
            or (isinstance(item, float) and math.isfinite(item))
        )
        if not scalar:
            raise _refuse(
                "labels", "{key} must be a string, number, boolean or null, not {kind}", key=repr(key[:50]),
                kind=_kind(item),
            )  # fmt: skip
    return labels


# A flat map of scalars (a job's origin).
Labels = Annotated[
    dict[str, Any],
    Checked(
        _check_labels,
        {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}},
    ),
]
