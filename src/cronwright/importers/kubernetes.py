"""Kubernetes CronJob manifests (`batch/v1`, several documents in one YAML text) as command schedules.

| CronJob | cronwright |
| --- | --- |
| `schedule` (`TZ=`/`CRON_TZ=` in it refused, as the API server refuses it) | `schedule.cron` |
| `timeZone`; none: the controller-manager's zone, taken as UTC | `schedule.tz` |
| `concurrencyPolicy` Allow / Forbid / Replace | `overlap` allow / skip / replace |
| `startingDeadlineSeconds`; the controller starts the latest missed schedule | `misfire = "coalesce"` |
| `suspend: true` | paused after its create (`--apply`), noted otherwise |
| the one container's `command` + `args`, `env` values | the argv, variables through env(1) |
| `activeDeadlineSeconds`, `backoffLimit` | action `timeout`, `max_attempts` |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from cronwright.errors import Invalid
from cronwright.importers.outcome import Batch, Reading, slug
from cronwright.importers.shell_words import with_environment
from cronwright.timing.cron import CronExpression
from cronwright.timing.zones import zone as named_zone

FORMAT = "kubernetes"
TARGET = "kubernetes"
GENERAL = (
    "each CronJob's container command now runs on the node as a plain process, not in a pod: no image, "
    "volumes, resources or service account apply.",
)
_OVERLAP = {"Allow": "allow", "Forbid": "skip", "Replace": "replace"}


def read(text: str, label: str) -> Batch:
    """The mapping of every document in the YAML `text` (a file named `label`)."""
    batch = Batch(FORMAT, GENERAL)
    batch.target(TARGET, {"kind": "command"})
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        batch.refuse(label, text[:60], f"not valid YAML: {error}")
        return batch
    for index, document in enumerate(documents, start=1):
        where = f"{label}#{index}"
        if not isinstance(document, Mapping) or document.get("kind") != "CronJob":
            kind = document.get("kind") if isinstance(document, Mapping) else type(document).__name__
            batch.refuse(where, f"kind: {kind}", "not a CronJob: only CronJob documents hold schedules")
            continue
        meta = document.get("metadata") or {}
        ident = f"{meta.get('namespace') or 'default'}/{meta.get('name') or 'unnamed'}"
        problem = _one(batch, f"{where} {ident}", ident, document)
        if problem:
            batch.refuse(f"{where} {ident}", f"CronJob {ident}", problem)
    return batch


def _one(batch: Batch, where: str, ident: str, job: Mapping[str, Any]) -> str | None:
    """Maps one CronJob, or returns why it cannot be."""
    notes: list[str] = []
    if job.get("apiVersion") != "batch/v1":
        notes.append(f"apiVersion {job.get('apiVersion')} read as batch/v1")
    spec = job.get("spec") or {}
    schedule_text = str(spec.get("schedule") or "")
    if "TZ=" in schedule_text:
        return "TZ= or CRON_TZ= inside schedule is refused by Kubernetes itself; set spec.timeZone"
    try:
        expression = CronExpression.parse(schedule_text, "schedule")
    except Invalid as error:
        return error.message
    zone_name = spec.get("timeZone")
    if zone_name is None:
        zone_name = "UTC"
        notes.append("no timeZone: Kubernetes reads it in the controller-manager's zone, taken here as UTC")
    try:
        zone_name = named_zone(zone_name, "timeZone").key
    except Invalid as error:
        return error.message
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy not in _OVERLAP:
        return f"concurrencyPolicy {policy!r} is none of Allow, Forbid, Replace"
    seed: dict[str, Any] = {
        "name": slug(ident.replace("/", "-"), 90),
        "dedupe_key": f"kubernetes:{ident}",
        "schedule": {"cron": str(expression), "tz": zone_name},
        "overlap": _OVERLAP[policy],
        "misfire": "coalesce",
    }
    if spec.get("startingDeadlineSeconds") is not None:
        notes.append(
            f"startingDeadlineSeconds {spec['startingDeadlineSeconds']}: the grace here is the node's "
            "misfire_grace, one for every schedule"
        )
    if spec.get("suspend"):
        notes.append("suspended: `--apply` pauses it after its create; otherwise run `cronwright pause`")
    template = (spec.get("jobTemplate") or {}).get("spec") or {}
    pod = (template.get("template") or {}).get("spec") or {}
    containers = pod.get("containers") or []
    if len(containers) != 1:
        return f"{len(containers)} containers: a schedule runs one command, so exactly one is needed"
    if pod.get("initContainers"):
        return "initContainers run before the command in the pod; a schedule runs one command"
    container = containers[0]
    command, args = container.get("command"), container.get("args") or []
    if not command:
        return "no command: the container runs its image's ENTRYPOINT, which the manifest does not say"
    argv = tuple(str(word) for word in [*command, *args])
    variables: dict[str, str] = {}
    for variable in container.get("env") or []:
        if "value" in variable:
            variables[str(variable["name"])] = str(variable["value"])
        else:
            notes.append(f"env {variable.get('name')} comes from a secret or ConfigMap: not carried")
    action: dict[str, Any] = {"argv": list(with_environment(argv, variables)), "timeout": "1d"}
    if template.get("activeDeadlineSeconds"):
        action["timeout"] = f"{int(template['activeDeadlineSeconds'])}s"
    backoff = int(template.get("backoffLimit", 6))
    seed["max_attempts"] = min(backoff + 1, 100)
    seed["retry_backoff_ms"] = 10_000  # the Job controller's first back-off, doubling as here
    shell = len(argv) >= 2 and argv[0] in ("sh", "/bin/sh", "bash", "/bin/bash") and argv[1] == "-c"
    if shell:
        notes.append("the manifest itself runs a shell (sh -c)")
    notes.append(f"image {container.get('image')}: the command must exist on the node")
    reading = Reading("cron", (schedule_text,), zone_name)
    entry = batch.add(where, f"CronJob {ident}", TARGET, action, seed, notes, shell, reading)
    if spec.get("suspend") and entry.seed is not None:
        batch.paused.add(entry.seed["dedupe_key"])
    return None
