"""Kubernetes CronJob manifests (written for these tests, modelled on the Kubernetes docs' examples)."""

from __future__ import annotations

from cronwright.importers import kubernetes
from cronwright.importers.outcome import Status

from .conftest import fixture, loads, refused, seed_of


def test_each_cronjob_is_mapped_with_its_policies_and_each_other_document_refused() -> None:
    batch = kubernetes.read(fixture("cronjobs.yaml"), "cronjobs.yaml")
    loads(batch)
    hello, report, replace = (e for e in batch.entries if e.status is not Status.REFUSED)

    assert seed_of(hello) == {
        "dedupe_key": "kubernetes:default/hello", "name": "default-hello", "target": "kubernetes",
        "action": "default-hello", "schedule": {"cron": "* * * * *", "tz": "UTC"}, "overlap": "allow",
        "misfire": "coalesce", "max_attempts": 7, "retry_backoff_ms": 10_000,
    }  # fmt: skip
    assert hello.shell and "controller-manager's zone" in hello.notes[0]
    assert batch.targets["kubernetes"]["actions"]["default-hello"] == {
        "argv": ["/bin/sh", "-c", "date; echo Hello from the Kubernetes cluster"],
        "timeout": "1d",
    }

    nightly = seed_of(report)
    assert nightly["schedule"] == {"cron": "30 2 * * *", "tz": "Europe/Berlin"}
    assert (nightly["overlap"], nightly["misfire"], nightly["max_attempts"]) == ("skip", "coalesce", 3)
    assert batch.targets["kubernetes"]["actions"]["reports-nightly-report"] == {
        "argv": ["/usr/bin/env", "MODE=full", "/usr/local/bin/report", "--since", "yesterday"],
        "timeout": "3600s",
    }
    assert batch.paused == {"kubernetes:reports/nightly-report"}
    assert any("TOKEN comes from a secret" in note for note in report.notes)
    assert any("startingDeadlineSeconds 200" in note for note in report.notes)
    assert not report.shell

    assert seed_of(replace)["overlap"] == "replace"
    assert seed_of(replace)["schedule"] == {"cron": "0 * * * *", "tz": "Etc/UTC"}

    assert refused(batch) == {
        "cronjobs.yaml#4 default/tz-inside": "TZ= or CRON_TZ= inside schedule is refused by Kubernetes "
        "itself; set spec.timeZone",
        "cronjobs.yaml#5 default/entrypoint-only": "no command: the container runs its image's ENTRYPOINT, "
        "which the manifest does not say",
        "cronjobs.yaml#6": "not a CronJob: only CronJob documents hold schedules",
    }


def test_yaml_that_does_not_parse_is_one_refusal_not_a_crash() -> None:
    batch = kubernetes.read("a: [b", "broken.yaml")
    assert [entry.status for entry in batch.entries] == [Status.REFUSED]
    assert batch.entries[0].reason.startswith("not valid YAML")
