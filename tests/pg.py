"""PostgreSQL for tests: the server that $CRONWRIGHT_TEST_POSTGRES names, and a scratch schema per test.

Without the variable, PostgreSQL tests skip, and say why. With it, they must run: a server that cannot
be reached fails them, loudly, rather than skipping them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

ENV = "CRONWRIGHT_TEST_POSTGRES"


def server_url() -> str:
    """The test server's URL; skips the test when none is configured, fails it when it is unreachable."""
    url = os.environ.get(ENV, "")
    if not url:
        pytest.skip(
            f"{ENV} is not set; set it to a PostgreSQL URL (CI uses "
            "postgresql://postgres@127.0.0.1:5432/test) to run the PostgreSQL tests"
        )
    problem = _unreachable(url)
    if problem:
        pytest.fail(f"{ENV} is set, but its server cannot be reached: {problem}", pytrace=False)
    return url


@cache
def _unreachable(url: str) -> str | None:
    try:
        with psycopg.connect(url, connect_timeout=5):
            return None
    except psycopg.Error as error:
        return " ".join(str(error).split())


def with_params(url: str, **params: str) -> str:
    """`url` with query parameters set (replacing any of the same name)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in params] + list(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def connect(url: str) -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit connection to the test server (the `schema` parameter is cronwright's own)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
    return psycopg.connect(urlunsplit(parts._replace(query=urlencode(query))), autocommit=True)


@contextmanager
def scratch_schema() -> Iterator[tuple[str, str]]:
    """A fresh schema name on the test server, as (server URL, name); the schema is dropped afterwards."""
    url = server_url()
    name = f"cw_test_{secrets.token_hex(6)}"
    try:
        yield url, name
    finally:
        with connect(url) as connection:
            connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@contextmanager
def scratch_url() -> Iterator[str]:
    """A store URL for a fresh schema of its own on the test server; the schema is dropped afterwards."""
    with scratch_schema() as (url, name):
        yield with_params(url, schema=name)
