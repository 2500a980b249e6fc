"""The python worker process itself (`python -m cronwright.targets.worker`): the child side of the pool.

It serves one python target: it moves the protocol off its stdin and stdout (so that nothing target code
reads or prints can touch it), imports the target module once, with the target's `path` added to
`sys.path`, says it is ready (with the module's files and actions), and then runs one call at a time, each
acknowledged before its action starts, until its stdin closes. With `--describe` it reports the module's
actions and exits. The node's side, which starts workers, sends the calls and reads the replies, is
pool.py.

This module is the worker's `__main__`, and the fork server imports it once for every worker it forks
(forkserver.py runs its `main` in each forked child), so its top level imports the standard library and the
decorator only (and attempt.py's limit, which is standard library only too).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from cronwright.targets.attempt import MESSAGE_LIMIT
from cronwright.targets.decorator import ActionMark, Context, actions_of, call

_WIRE_MESSAGE_LIMIT = 4 * MESSAGE_LIMIT  # what a worker sends of it: the node masks first, then cuts

# A worker's first line for each call, before its action starts (see `main`); the pool knows it by its bytes.
STARTED = b'{"started": true}'


def main(argv: list[str] | None = None) -> int:
    """The worker: imports the module, says it is ready, then serves calls until its stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m cronwright.targets.worker")
    parser.add_argument("--module", required=True)
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--describe", action="store_true", help="report the module's actions and exit")
    options = parser.parse_args(argv)
    requests, replies = _take_protocol()
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        files, found = _import(options.module, options.path)
    except BaseException as error:
        traceback.print_exc()
        _send(replies, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return 1
    marks = [mark.describe() for _, mark in found.values()]
    _send(replies, {"ready": True, "pid": os.getpid(), "files": files, "actions": marks})
    if options.describe:
        return 0
    home = os.getcwd()
    for line in requests:
        # Acknowledged before the action starts: a worker that dies before this line never ran it, so the
        # node may hand the call to another worker without ever running an action twice.
        replies.write(STARTED + b"\n")
        replies.flush()
        reply = _serve(found, json.loads(line))
        sys.stdout.flush()
        sys.stderr.flush()
        os.chdir(home)  # an action that changed directory must not move the next one
        _send(replies, reply)
    return 0


def _take_protocol() -> tuple[IO[bytes], IO[bytes]]:
    """Moves the protocol off fds 0 and 1, so that nothing target code reads or prints can touch it.

    Afterwards fd 0 is /dev/null and fd 1 joins fd 2 in the node's capture file.
    """
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    # Line-buffered, so that prints and log lines (on stderr) reach the capture file in the order they happen.
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    return requests, replies


def _send(replies: IO[bytes], message: Mapping[str, Any]) -> None:
    replies.write(json.dumps(message, default=str).encode() + b"\n")
    replies.flush()


def _import(name: str, paths: list[str]) -> tuple[list[str], dict[str, tuple[Any, ActionMark]]]:
    sys.path[:0] = paths
    before = set(sys.modules)
    module = importlib.import_module(name)
    found = actions_of(module)
    if not found:
        raise LookupError(f"module {name!r} has no functions marked @cronwright.action")
    roots = [str(Path(path).resolve()) for path in paths]
    files: set[str] = set()
    for key in (set(sys.modules) - before) | {name}:
        file = getattr(sys.modules[key], "__file__", None)
        if not file:
            continue
        resolved = str(Path(file).resolve())
        # The module itself wherever it lives, and whatever it imported from the target's own path.
        if key == name or any(resolved.startswith(root + os.sep) for root in roots):
            files.add(resolved)
    return sorted(files), found


def _serve(found: Mapping[str, tuple[Any, ActionMark]], request: Mapping[str, Any]) -> dict[str, Any]:
    entry = found.get(request["action"])
    if entry is None:
        return {"ok": False, "error": f"LookupError: the module has no action {request['action']!r} any more"}
    func, mark = entry
    cron = request["cron"]
    ctx = Context(
        fire_id=cron["fire_id"],
        attempt=cron["attempt"],
        scheduled_for=datetime.fromisoformat(cron["scheduled_for"]),
        fired_at=datetime.fromisoformat(cron["fired_at"]),
        deadline=datetime.fromisoformat(request["deadline"]),
        secrets=request.get("secrets") or {},
        log=logging.getLogger(f"cronwright.action.{mark.name}"),
        schedule=request.get("schedule", ""),
        job_id=request.get("job_id", 0),
        target=request.get("target", ""),
        action=mark.name,
    )
    try:
        value = call(func, mark, request.get("args") or {}, ctx)
    except BaseException as error:  # SystemExit too: an action never ends its worker by raising
        _print_traceback(error)
        return {"ok": False, **_bounded(f"{type(error).__name__}: {error}")}
    return {"ok": True, **_bounded(_render(value))}


def _print_traceback(error: BaseException) -> None:
    """The traceback from the action's own frame down: the worker's frames above it are only noise."""
    tb = error.__traceback__
    ours = {__file__, call.__code__.co_filename}
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb)


def _render(value: object) -> str:
    """The return value as the run's message: a string as it is, None as nothing, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _bounded(text: str) -> dict[str, Any]:
    # Cut here only to keep the reply small; the node masks secrets, then cuts to MESSAGE_LIMIT itself.
    if len(text) <= _WIRE_MESSAGE_LIMIT:
        return {"message": text}
    return {"message": text[:_WIRE_MESSAGE_LIMIT], "cut": True}


if __name__ == "__main__":
    sys.exit(main())
