"""The Python API: `cronwright.Client`, typed methods over the protocol, for scripts that would rather not
shell out to the CLI.

    with Client.http("http://127.0.0.1:8765", token="...") as cw:     # a `serve`, as the token's source
        job = cw.create_job("report", "reports", "daily", schedule={"cron": "0 7 * * *"}).job
    with Client.local("cronwright.toml") as cw:                         # the config's store, in process
        print([job.name for job in cw.list().jobs])

Each method builds its request with the protocol's own model (`cronwright.declare.requests`), so a wrong
type is refused before anything is sent, in the words the server would use; and reads the reply into its
model (`cronwright.declare.replies`). A refusal raises `Refused`, which carries the protocol's reply.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from cronwright.declare import replies
from cronwright.declare.refusals import refusal
from cronwright.declare.requests import MODELS
from cronwright.errors import CronwrightError

R = TypeVar("R", bound=BaseModel)
Send = Callable[[dict[str, Any]], dict[str, Any]]


class Refused(CronwrightError):
    """The server refused the request and changed nothing. `reply` is the protocol's refusal."""

    def __init__(self, reply: Mapping[str, Any]) -> None:
        super().__init__(f"{reply.get('error')}: {reply.get('message')}")
        self.reply = dict(reply)
        self.code = str(reply.get("error"))
        self.message = str(reply.get("message"))
        self.field: str | None = reply.get("field")


class Client:
    """A client of one cronwright node: over HTTP (`Client.http`) or in this process (`Client.local`)."""

    def __init__(self, send: Send, close: Callable[[], object] = lambda: None) -> None:
        """`send` answers one protocol request (a dict) with the protocol's reply."""
        self._send = send
        self._close = close
        self._closed = False

    @classmethod
    def http(cls, url: str, token: str, timeout: float = 30.0) -> Client:
        """A client of the `serve` at `url`, as the source whose bearer token is `token`."""
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)

        def send(request: dict[str, Any]) -> dict[str, Any]:
            reply = http.post("/v1/call", json=request)
            if reply.status_code == 401:
                raise Refused({"ok": False, "error": "unauthorized", "message": "the token is not known"})
            answer: dict[str, Any] = reply.json()
            return answer

        return cls(send, http.close)

    @classmethod
    def local(cls, config: str | Path | None = None) -> Client:
        """A client of the config's store in this process, as the local operator (as the CLI is).

        `config` is found as the CLI finds it when not given. Close the client (or use `with`) to let runs
        it started finish and to close the store."""
        from cronwright.app import build
        from cronwright.config.settings import load
        from cronwright.core.sources import operator
        from cronwright.targets.executor import TargetRunner
        from cronwright.targets.registry import build_registry
        from cronwright.targets.secrets import Secrets

        settings = load(None if config is None else str(config))
        registry = build_registry(settings)
        runner = TargetRunner(registry, Secrets.from_config(settings), zone=settings.node.tz)
        app = build(settings, runner, registry, seed=False)
        return cls(lambda request: app.protocol.dispatch(request, operator()), app.close)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._close()

    # --- the protocol ---------------------------------------------------------------------------------

    def call(self, action: str, **fields: Any) -> dict[str, Any]:
        """Sends one request, checked against its model first, and answers with the reply as it came.

        Raises `Refused` for a request the model or the server refuses."""
        if self._closed:
            # A closed local client's store is closed too: its refusal would say "try again", which no
            # retry on this client can ever make true.
            raise CronwrightError(
                "this Client is closed: open a new one (Client.local(...) or Client.http(...)), or make the "
                "calls inside its `with` block"
            )
        model = MODELS.get(action)
        if model is None:
            raise Refused({"ok": False, "error": "unknown_action", "message": f"unknown action {action!r}"})
        request = {"action": action, **{key: value for key, value in fields.items() if value is not None}}
        try:
            checked = model.model_validate(request)
        except ValidationError as error:
            raise Refused(refusal(error, model, f"a `{action}` request").reply()) from None
        reply = self._send(checked.model_dump(exclude_unset=True))
        if not reply.get("ok"):
            raise Refused(reply)
        return reply

    def _typed(self, reply_model: type[R], action: str, **fields: Any) -> R:
        return reply_model.model_validate(self.call(action, **fields))

    def create_job(
        self,
        name: str,
        target: str,
        action: str,
        *,
        schedule: Mapping[str, Any] | None = None,
        run_at: str | None = None,
        args: Mapping[str, Any] | None = None,
        lifetime: str | None = None,
        misfire: str | None = None,
        max_attempts: int | None = None,
        retry_backoff_ms: int | None = None,
        breaker_threshold: int | None = None,
        dedupe_key: str | None = None,
        once: bool | None = None,
        origin: Mapping[str, str | int | float | bool | None] | None = None,
    ) -> replies.JobReply:
        """Creates a schedule of `target`.`action`: give `schedule` ({"cron": ...}, {"every": "5m"}, ...)
        or `run_at` (an ISO-8601 instant)."""
        job = {
            "name": name, "target": target, "action": action, "schedule": _plain(schedule, "schedule"),
            "run_at": run_at, "args": _plain(args, "args"), "lifetime": lifetime, "misfire": misfire,
            "max_attempts": max_attempts, "retry_backoff_ms": retry_backoff_ms,
            "breaker_threshold": breaker_threshold, "dedupe_key": dedupe_key, "once": once,
            "origin": _plain(origin, "origin"),
        }  # fmt: skip
        given = {key: value for key, value in job.items() if value is not None}
        return self._typed(replies.JobReply, "create_job", job=given)

    def update(
        self, name: str | None = None, *, job_id: int | None = None, **changes: Any
    ) -> replies.JobReply:
        """Changes what may change (schedule, run_at, args, lifetime, misfire, max_attempts,
        retry_backoff_ms, breaker_threshold; `new_name` renames)."""
        if "new_name" in changes:
            changes["name"] = changes.pop("new_name")
        for field in ("schedule", "args"):
            if changes.get(field) is not None:
                changes[field] = _plain(changes[field], field)
        return self._typed(replies.JobReply, "update", name=name, job_id=job_id, changes=changes)

    def get(self, name: str | None = None, *, job_id: int | None = None) -> replies.GetReply:
        return self._typed(replies.GetReply, "get", name=name, job_id=job_id)

    def list(
        self,
        state: str | None = None,
        target: str | None = None,
        limit: int | None = None,
        after_name: str | None = None,
    ) -> replies.ListReply:
        return self._typed(
            replies.ListReply, "list", state=state, target=target, limit=limit, after_name=after_name
        )

    def pause(
        self, name: str | None = None, *, job_id: int | None = None, note: str | None = None
    ) -> replies.JobReply:
        return self._typed(replies.JobReply, "pause", name=name, job_id=job_id, note=note)

    def resume(
        self, name: str | None = None, *, job_id: int | None = None, note: str | None = None
    ) -> replies.JobReply:
        return self._typed(replies.JobReply, "resume", name=name, job_id=job_id, note=note)

    def backfill(
        self,
        name: str | None = None,
        *,
        job_id: int | None = None,
        start: str,
        end: str,
        dry_run: bool | None = None,
    ) -> replies.BackfillReply:
        """Runs the occurrences of [start, end) that never started (the protocol's `from` and `to`)."""
        return self._typed(
            replies.BackfillReply,
            "backfill",
            name=name,
            job_id=job_id,
            dry_run=dry_run,
            **{"from": start, "to": end},
        )

    def run_now(self, name: str | None = None, *, job_id: int | None = None) -> replies.RunNowReply:
        return self._typed(replies.RunNowReply, "run_now", name=name, job_id=job_id)

    def delete(self, name: str | None = None, *, job_id: int | None = None) -> replies.JobReply:
        return self._typed(replies.JobReply, "delete", name=name, job_id=job_id)

    def history(
        self, name: str | None = None, *, job_id: int | None = None, limit: int | None = None
    ) -> replies.HistoryReply:
        return self._typed(replies.HistoryReply, "history", name=name, job_id=job_id, limit=limit)

    def status(self) -> replies.StatusReply:
        return self._typed(replies.StatusReply, "status")

    def preview(
        self, expression: str, tz: str | None = None, after: str | None = None, count: int | None = None
    ) -> replies.PreviewReply:
        return self._typed(
            replies.PreviewReply, "preview", expression=expression, tz=tz, after=after, count=count
        )

    def targets(self) -> replies.TargetsReply:
        return self._typed(replies.TargetsReply, "targets")


# What to write instead of a string where a mapping belongs, by field.
_INSTEAD = {
    "schedule": 'a mapping of one kind, such as {{"cron": {text}}}, {{"every": "15m"}} or {{"at": '
    '"2026-12-01T09:00:00+01:00"}}',
    "args": 'a mapping of the action\'s args, such as {{"to": "ops"}}; for JSON text, pass json.loads(text)',
    "origin": 'a mapping of labels, such as {{"team": "ops"}}',
}


def _plain(value: object, field: str) -> dict[str, Any] | None:
    """A mapping as the JSON object the models take (a dict); anything else is refused naming `field`,
    with what to write instead (`schedule="0 7 * * *"` is `schedule={"cron": "0 7 * * *"}`)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    text = json.dumps(value if isinstance(value, str) else "0 7 * * *")
    message = f"'{field}' must be {_INSTEAD[field].format(text=text)}, not {type(value).__name__}"
    raise Refused({"ok": False, "error": "invalid", "field": field, "message": message})
