"""Dashboard sessions: who is logged in, by an opaque id in an HttpOnly, SameSite=Strict cookie.

Sessions live in the serving process's memory: a restart logs everyone out, and no session id, CSRF token
or source is ever written anywhere. Each session has its own CSRF token, which every change must carry.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronwright.core.sources import Source

COOKIE = "cronwright_session"
LIFETIME = timedelta(hours=12)  # from login: a session then needs a new login, token or link


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    source: Source
    csrf: str
    ends_at: datetime
    # How the caller logged in: "token" (a source's bearer token) or "link" (the operator's one-time link).
    by: str

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


class Sessions:
    """The live sessions of one serving process, by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, Session] = {}

    def start(self, source: Source, now: datetime, by: str) -> Session:
        session = Session(secrets.token_urlsafe(32), source, secrets.token_urlsafe(32), now + LIFETIME, by)
        with self._lock:
            self._forget_ended(now)
            self._by_id[session.id] = session
        return session

    def find(self, session_id: str | None, now: datetime) -> Session | None:
        """The live session of that id; None for an unknown, ended or missing one."""
        if not session_id:
            return None
        with self._lock:
            session = self._by_id.get(session_id)
            if session is not None and session.ends_at <= now:
                del self._by_id[session_id]
                return None
        return session

    def end(self, session_id: str) -> None:
        with self._lock:
            self._by_id.pop(session_id, None)

    def _forget_ended(self, now: datetime) -> None:
        for key in [k for k, s in self._by_id.items() if s.ends_at <= now]:
            del self._by_id[key]
