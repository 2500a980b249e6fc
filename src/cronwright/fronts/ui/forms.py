"""The schedule form: its fields as a job row would hold them, and back again. Pure: no request, no I/O.

A form has `name`, `target` ("TARGET.ACTION"), `kind` (cron, every or at), `cron` (one expression a line:
several fire at their union), `tz`, `every`, `at`, `jitter`, `exclude` (calendar names, comma-separated),
`args` (a JSON object) and `lifetime`. What a value means is the protocol's to judge: the form only
shapes it, and a refusal names the protocol's field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

FIELDS = ("name", "target", "kind", "cron", "tz", "every", "at", "jitter", "exclude", "args", "lifetime")


class FormProblem(ValueError):
    """A field the form itself cannot shape (args that are not a JSON object)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def blank() -> dict[str, str]:
    return {**dict.fromkeys(FIELDS, ""), "kind": "cron", "args": "{}"}


def schedule_of(form: Mapping[str, str]) -> dict[str, Any]:
    """The protocol's `schedule` object the form describes."""
    kind = form.get("kind") or "cron"
    schedule: dict[str, Any]
    if kind == "at":
        return {"at": form.get("at", "").strip()}
    if kind == "every":
        schedule = {"every": form.get("every", "").strip()}
    else:
        lines = expressions(form.get("cron", ""))
        schedule = {"cron": lines[0] if len(lines) == 1 else lines}
        if form.get("tz", "").strip():
            schedule["tz"] = form["tz"].strip()
    if form.get("jitter", "").strip():
        schedule["jitter"] = form["jitter"].strip()
    excluded = calendars(form.get("exclude", ""))
    if excluded:
        schedule["exclude"] = excluded
    return schedule


def expressions(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def calendars(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def args_of(form: Mapping[str, str]) -> dict[str, Any]:
    text = form.get("args", "").strip() or "{}"
    try:
        args = json.loads(text)
    except ValueError as error:
        raise FormProblem("args", f"args must be a JSON object: {error}") from None
    if not isinstance(args, dict):
        raise FormProblem("args", 'args must be a JSON object, such as {"region": "eu"}')
    return args


def job_of(form: Mapping[str, str]) -> dict[str, Any]:
    """The `job` of a create_job request."""
    target, _, action = form.get("target", "").partition(".")
    job: dict[str, Any] = {
        "name": form.get("name", "").strip(),
        "target": target,
        "action": action,
        "schedule": schedule_of(form),
        "args": args_of(form),
    }
    if form.get("lifetime", "").strip():
        job["lifetime"] = form["lifetime"].strip()
    return job


def changes_of(form: Mapping[str, str], row: Mapping[str, Any]) -> dict[str, Any]:
    """The `changes` of an update from the job `row` to what the form says: only what differs."""
    wanted = job_of({**form, "target": f"{row['target']}.{row['action']}"})
    changes: dict[str, Any] = {}
    if wanted["name"] and wanted["name"] != row["name"]:
        changes["name"] = wanted["name"]
    if wanted["schedule"] != _comparable(row["schedule"]):
        changes["schedule"] = wanted["schedule"]
    if wanted["args"] != row["args"]:
        changes["args"] = wanted["args"]
    if "lifetime" in wanted:
        changes["lifetime"] = wanted["lifetime"]
    return changes


def form_of(row: Mapping[str, Any]) -> dict[str, str]:
    """The form that shows the job `row`."""
    schedule: Mapping[str, Any] = row["schedule"]
    cron = schedule.get("cron", "")
    kind = (
        "cron" if "cron" in schedule else "every" if "every" in schedule or "every_ms" in schedule else "at"
    )
    every = schedule.get("every") or (f"{schedule['every_ms']}ms" if "every_ms" in schedule else "")
    return {
        **blank(),
        "name": row["name"],
        "target": f"{row['target']}.{row['action']}",
        "kind": kind,
        "cron": "\n".join(cron) if isinstance(cron, list) else str(cron),
        "tz": str(schedule.get("tz", "")),
        "every": str(every),
        "at": str(schedule.get("at", "")),
        "jitter": str(schedule.get("jitter") or ""),
        "exclude": ", ".join(schedule.get("exclude") or []),
        "args": json.dumps(row.get("args") or {}, indent=1, ensure_ascii=False),
    }


def _comparable(schedule: Mapping[str, Any]) -> dict[str, Any]:
    """A row's schedule as the form would write it, so that an unchanged form changes nothing."""
    return schedule_of(form_of({"name": "", "target": "", "action": "", "schedule": schedule}))
