"""Who may schedule what. The local operator may use every target; any other source must be configured."""

from __future__ import annotations

import fnmatch
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

OPERATOR = "cli"
TOKEN_BYTES = 32  # of randomness in a token `new_token` makes: 256 bits, beyond any guessing


def token_digest(token: str) -> str:
    """The SHA-256 of a bearer token, in hex, as a source's `token_sha256` holds it."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    """A fresh bearer token: TOKEN_BYTES random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True, slots=True)
class Source:
    name: str
    targets: tuple[str, ...] = ()
    max_schedules: int | None = None
    min_period: timedelta | None = None
    max_lifetime: timedelta | None = None
    # Several digests let a token be rotated without downtime: add the new, move the callers, drop the old.
    token_sha256: tuple[str, ...] = ()
    operator: bool = False
    max_mutations_per_minute: int | None = None
    # `approval = "operator"`: its new schedules, and changes of their timing or args, wait `pending`
    # for an operator's approve (semantic 37).
    needs_approval: bool = False

    def allows(self, target: str, action: str) -> bool:
        """Fail-closed: a source with no patterns may schedule nothing."""
        if self.operator:
            return True
        pair = f"{target}.{action}"
        return any(fnmatch.fnmatchcase(pair, pattern) for pattern in self.targets)

    def sees(self, created_by: str) -> bool:
        """A source sees and changes only its own schedules; the operator sees all."""
        return self.operator or created_by == self.name


def operator() -> Source:
    return Source(OPERATOR, operator=True)
