"""HTTP targets: POST the envelope as JSON, signed with HMAC-SHA256 against tampering and replay.

The signature header is `X-Cronwright-Signature: t=<unix seconds>,v1=<hex>`, where hex is
HMAC-SHA256(secret, f"{t}." + body), over the body's exact bytes. A receiver recomputes it with the shared
secret, compares in constant time, and refuses a `t` too far from its own clock (see `verify`), so a captured
request cannot be replayed later. `X-Cronwright-Fire-Id` and `X-Cronwright-Attempt` repeat the envelope's
identity for receivers that route on headers; retries of one occurrence share the fire id.

A 2xx answer is `ok`; anything else is `error` with the status, and redirects are not followed (that would
send the signed body somewhere the config does not name). No answer by the action's timeout is `timeout`.
The response body's first line becomes part of the message, and the body (bounded) the run's output.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cronwright._version import __version__
from cronwright.targets.attempt import OUTPUT_LIMIT, Call, Finished, Output
from cronwright.targets.specs import ActionSpec, TargetSpec

if TYPE_CHECKING:
    import httpx

SIGNATURE_HEADER = "X-Cronwright-Signature"
FIRE_ID_HEADER = "X-Cronwright-Fire-Id"
ATTEMPT_HEADER = "X-Cronwright-Attempt"
TOLERANCE = 300.0


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The signature header's value for `body` sent at `timestamp` (unix seconds)."""
    digest = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: str, header: str, body: bytes, now: float, tolerance: float = TOLERANCE) -> bool:
    """Whether `header` signs `body` with `secret`, at a time within `tolerance` seconds of `now`.

    For receivers (and tests): pass your own clock's unix time as `now`.
    """
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    expected = sign(secret, body, timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, fields.get("v1", ""))


def body_of(call: Call) -> bytes:
    return json.dumps(call.envelope, ensure_ascii=False, separators=(",", ":")).encode()


class HttpExecutor:
    """Runs http actions over one shared client. `close()` ends what runs; those runs end `interrupted`."""

    def __init__(self, client: httpx.Client | None = None, wall: Callable[[], float] = time.time) -> None:
        """`wall` is the unix-time clock the signature's timestamp comes from (the receiver checks it)."""
        # Made at the first http run: most nodes have no http target, and a `tick` would pay for httpx's
        # import and its TLS context at every start.
        self._client = client
        self._client_lock = threading.Lock()
        self._wall = wall
        self._closed = threading.Event()

    def run(self, target: TargetSpec, action: ActionSpec, call: Call) -> Finished:
        """Runs one attempt. Never raises: every failure is a Finished."""
        import httpx

        assert target.url is not None and target.signing_secret is not None
        body = body_of(call)
        cron = call.envelope["cron"]
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"cronwright/{__version__}",
            SIGNATURE_HEADER: sign(call.secrets[target.signing_secret], body, int(self._wall())),
            FIRE_ID_HEADER: str(cron["fire_id"]),
            ATTEMPT_HEADER: str(cron["attempt"]),
        }
        if self._closed.is_set():
            return Finished("interrupted", "the node is shutting down")
        deadline = time.monotonic() + call.timeout
        try:
            status, head, omitted = self._abandonable(call, target.url, body, headers, deadline)
        except _Abandoned:
            return Finished("cancelled", f"POST {target.url} was abandoned for a newer occurrence")
        except (httpx.TimeoutException, _Late):
            return Finished("timeout", f"POST {target.url} got no answer within {call.timeout:g}s")
        except Exception as error:  # httpx.HTTPError, or the client closed under us by close()
            if self._closed.is_set():
                return Finished("interrupted", "the node stopped while this ran; the request was abandoned")
            return Finished("error", f"POST {target.url} failed: {type(error).__name__}: {error}")
        text = head.decode("utf-8", errors="replace")
        output = (Output(text, omitted=omitted),) if text else ()
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        message = f"HTTP {status}" + (f": {first[:200]}" if first else "")
        return Finished("ok" if 200 <= status < 300 else "error", message, output, cut=len(first) > 200)

    def close(self) -> None:
        self._closed.set()
        with self._client_lock:
            if self._client is not None:
                self._client.close()

    def _http(self) -> httpx.Client:
        import httpx

        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(follow_redirects=False)
            return self._client

    def _abandonable(
        self, call: Call, url: str, body: bytes, headers: dict[str, str], deadline: float
    ) -> tuple[int, bytes, int]:
        """`_post` on a thread of its own, so that overlap replace can abandon it (_Abandoned): no
        client call can be stopped from outside, so this one returns, and the request may still
        finish in the background (bounded by its own timeout), its answer ignored."""
        done = threading.Event()
        answer: list[tuple[int, bytes, int] | BaseException] = []

        def post() -> None:
            try:
                answer.append(self._post(url, body, headers, call.timeout, deadline))
            except BaseException as error:  # handed to the waiting thread, which raises it
                answer.append(error)
            finally:
                done.set()

        threading.Thread(target=post, name="cronwright-http", daemon=True).start()
        call.stop.hook(done.set)
        try:
            done.wait()
        finally:
            call.stop.hook(None)
        if not answer:
            raise _Abandoned
        if isinstance(answer[0], BaseException):
            raise answer[0]
        return answer[0]

    def _post(
        self, url: str, body: bytes, headers: dict[str, str], timeout: float, deadline: float
    ) -> tuple[int, bytes, int]:
        """Status, the body's first OUTPUT_LIMIT bytes, and how many bytes of it were left unread."""
        kept = bytearray()
        extra = 0
        with self._http().stream("POST", url, content=body, headers=headers, timeout=timeout) as response:
            for chunk in response.iter_bytes():
                if time.monotonic() > deadline:
                    raise _Late  # the read timeout is per read: a slow drip must still end at the deadline
                room = OUTPUT_LIMIT - len(kept)
                kept += chunk[:room]
                extra += max(0, len(chunk) - room)
                if extra:
                    break  # the rest is not kept, so it need not be read
            if extra:
                length = response.headers.get("content-length", "")
                extra = max(extra, int(length) - len(kept)) if length.isdigit() else extra
        return response.status_code, bytes(kept), extra


class _Late(Exception):
    pass


class _Abandoned(Exception):
    pass
