"""The args schemas that need no jsonschema: the plain ones `@cronwright.action` derives, checked by hand.

Importing jsonschema costs each `cronwright tick` some 150 ms, and every boot checks every action's schema,
every run its args. Most schemas use a few keywords only (type,
properties, required, additionalProperties, items, enum, anyOf and annotations), the ones the decorator
writes. For those, these functions give the answer jsonschema (Draft 2020-12) would, but only when it is
certainly yes: `False` means "not certainly", and the caller asks jsonschema, which also words the problems.
So an unknown keyword, a float where an integer is asked, an enum of anything but plain scalars, a value of
a type JSON does not have: jsonschema decides. Pure: no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Annotations: they never change whether a value is valid, and the meta-schema asks only that a title and
# a description be strings (a default, an example and a comment may be anything here: strings or not).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated"})
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf"})
_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def is_plain_schema(schema: object) -> bool:
    """True when `schema` certainly is a valid Draft 2020-12 schema (jsonschema's check_schema would pass)
    and uses only the keywords this module validates by hand."""
    if isinstance(schema, bool):
        return True
    if type(schema) is not dict:
        return False
    for key, value in schema.items():
        if key in ("title", "description"):
            if not isinstance(value, str):
                return False
        elif key in _ANNOTATIONS:
            if key == "deprecated" and not isinstance(value, bool):
                return False
            if key == "examples" and type(value) is not list:
                return False
            if key == "$comment" and not isinstance(value, str):
                return False
        elif key == "type":
            if not _is_type_keyword(value):
                return False
        elif key == "properties":
            if type(value) is not dict or not all(is_plain_schema(sub) for sub in value.values()):
                return False
        elif key == "required":
            if type(value) is not list or not all(isinstance(name, str) for name in value):
                return False
            if len(set(value)) != len(value):
                return False
        elif key in ("additionalProperties", "items"):
            if not is_plain_schema(value):
                return False
        elif key == "enum":
            if type(value) is not list:
                return False
        elif key == "anyOf":
            if type(value) is not list or not value or not all(is_plain_schema(sub) for sub in value):
                return False
        else:
            return False
    return True


def certainly_valid(schema: object, value: object) -> bool:
    """True when `value` certainly validates against `schema`, which must be plain (`is_plain_schema`: of a
    schema that is not, jsonschema may refuse the schema itself); False when it does not or when this module
    cannot be sure."""
    if isinstance(schema, bool):
        return schema
    if type(schema) is not dict:
        return False
    for key, rule in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key not in _KEYWORDS or not _holds(key, rule, schema, value):
            return False
    return True


def _holds(key: str, rule: Any, schema: Mapping[str, Any], value: object) -> bool:
    if key == "type":
        if isinstance(rule, str):
            return _is_of(rule, value)
        return type(rule) is list and any(isinstance(name, str) and _is_of(name, value) for name in rule)
    if key == "enum":
        return type(rule) is list and any(_same_scalar(member, value) for member in rule)
    if key == "anyOf":
        return type(rule) is list and any(certainly_valid(sub, value) for sub in rule)
    if key == "items":
        if type(value) is not list:
            return not isinstance(value, list | tuple)  # only a list is an array; a tuple: let jsonschema say
        return isinstance(rule, bool | dict) and all(certainly_valid(rule, item) for item in value)
    # properties, required, additionalProperties: they apply to objects only.
    if not isinstance(value, Mapping):
        return True
    if type(value) is not dict:
        return False  # a mapping jsonschema may or may not take for an object
    if key == "required":
        return type(rule) is list and all(isinstance(name, str) and name in value for name in rule)
    if key == "properties":
        return type(rule) is dict and all(
            certainly_valid(rule[name], value[name]) for name in rule if name in value
        )
    # additionalProperties: each key that `properties` does not name (there is no patternProperties here).
    named = schema.get("properties", {})
    if type(named) is not dict or not isinstance(rule, bool | dict):
        return False
    return all(certainly_valid(rule, item) for name, item in value.items() if name not in named)


def _is_type_keyword(value: object) -> bool:
    """A simple type's name, or a non-empty list of distinct ones (the meta-schema's `type`)."""
    if isinstance(value, str):
        return value in _TYPES
    if type(value) is not list or not value:
        return False
    return all(isinstance(name, str) and name in _TYPES for name in value) and len(set(value)) == len(value)


def _is_of(name: str, value: object) -> bool:
    """jsonschema's type check, where it is certain: exact JSON types (1.0 as an integer: not certain)."""
    kind = type(value)
    if name == "string":
        return kind is str
    if name == "integer":
        return kind is int
    if name == "number":
        return kind is int or kind is float
    if name == "boolean":
        return kind is bool
    if name == "null":
        return value is None
    if name == "object":
        return kind is dict
    if name == "array":
        return kind is list
    return False


def _same_scalar(member: object, value: object) -> bool:
    """Equal as JSON, where it is certain: a string, an int, a bool or null, of the very same type (so
    True is not 1, and 1.0 against 1 is left to jsonschema)."""
    if type(member) is not type(value) or type(value) not in (str, int, bool, type(None)):
        return False
    return member == value
