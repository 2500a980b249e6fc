"""Never twice, across nodes: three real `cronwright serve` processes on one PostgreSQL database.

Each node runs a command target that appends `$CRONWRIGHT_FIRE_ID $CRONWRIGHT_ATTEMPT` to one log file,
so the log is what the target really received, whatever the store says. Jobs are inserted straight
into the store (a thousand creates through the CLI would only measure process start-up).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pg
from cronwright.core import engine
from cronwright.core.model import AtSchedule, CronSchedule, Job, Outcome, State
from cronwright.store.postgres import PostgresStore
from cronwright.timing.cron_set import CronSet

CRONWRIGHT = Path(sys.executable).parent / "cronwright"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(what: str, check: Callable[[], bool], seconds: float) -> float:
    """Waits until `check()` holds, for `seconds` at most; returns how long it took, or fails saying what."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > seconds:
            pytest.fail(f"after {seconds:.0f}s, still waiting for {what}", pytrace=False)
        time.sleep(0.2)
    return time.monotonic() - started


@dataclass
class Cluster:
    """Nodes serving one scratch schema, each with a config of its own, and the log their target writes."""

    url: str
    folder: Path
    store: PostgresStore
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.folder / "fired.log"

    def config(self, index: int) -> Path:
        quoted_log = shlex.quote(str(self.log))
        append = ["/bin/sh", "-c", f'echo "$CRONWRIGHT_FIRE_ID $CRONWRIGHT_ATTEMPT" >> {quoted_log}']
        # The slow action also logs its pid, so that the test can end what a killed node left running.
        slow = [
            "/bin/sh",
            "-c",
            f'echo "$CRONWRIGHT_FIRE_ID $CRONWRIGHT_ATTEMPT $$" >> {quoted_log}; exec /bin/sleep 30',
        ]
        path = self.folder / f"node-{index}.toml"
        # Short leases, so that a death is seen in seconds; JSON strings are TOML strings.
        path.write_text(
            f"""
[node]
zone = "UTC"
store = "{self.url}"
listen = "127.0.0.1:{free_port()}"
max_concurrency = 32
lease_beat = "1s"
lease_ttl = "5s"
shutdown_grace = "2s"

[targets.log]
kind = "command"

[targets.log.actions.append]
argv = {json.dumps(append)}

[targets.log.actions.slow]
argv = {json.dumps(slow)}
timeout = "2m"
"""
        )
        return path

    def start(self, count: int) -> None:
        for index in range(count):
            stderr = (self.folder / f"node-{index}.err").open("wb")
            with stderr:
                argv = [str(CRONWRIGHT), "--config", str(self.config(index)), "serve"]
                self.nodes.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr))
        wait_for(f"{count} nodes to beat", lambda: len(self.ids()) == count, 30)

    def ids(self) -> dict[int, str]:
        """The node id each of our processes beats under, by pid (ids are host:pid:nonce)."""
        pids = {node.pid for node in self.nodes if node.poll() is None}
        return {
            int(beat.node.split(":")[1]): beat.node
            for beat in self.store.beats()
            if int(beat.node.split(":")[1]) in pids
        }

    def stop(self) -> None:
        """SIGTERM to each live node; each must finish its runs and exit 0."""
        live = [node for node in self.nodes if node.poll() is None]
        for node in live:
            node.send_signal(signal.SIGTERM)
        for index, node in enumerate(live):
            assert node.wait(30) == 0, (self.folder / f"node-{index}.err").read_text()

    def lines(self) -> list[tuple[str, ...]]:
        text = self.log.read_text() if self.log.exists() else ""
        return [tuple(line.split()) for line in text.splitlines()]

    def fired(self) -> Counter[tuple[str, str]]:
        """How often the target received each (fire_id, attempt)."""
        return Counter((line[0], line[1]) for line in self.lines())


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with pg.scratch_url() as url:
        store = PostgresStore(url)
        made = Cluster(url, tmp_path, store)
        try:
            yield made
        finally:
            for node in made.nodes:
                if node.poll() is None:
                    node.kill()
                    node.wait(10)
            kill_sleepers(made)
            store.close()


def kill_sleepers(cluster: Cluster) -> None:
    """Ends the slow commands that a killed node left behind (their pids are in the log, as `$$`)."""
    for line in cluster.lines():
        if len(line) == 3 and Path(f"/proc/{line[2]}/cmdline").exists():
            with contextlib.suppress(OSError):
                if b"sleep" in Path(f"/proc/{line[2]}/cmdline").read_bytes():
                    os.kill(int(line[2]), signal.SIGKILL)


def slow_lines(cluster: Cluster) -> list[str]:
    """The fire_ids the slow action received (its lines carry a third word: the command's pid)."""
    return [line[0] for line in cluster.lines() if len(line) == 3]


def one_shot(name: str, due: datetime, action: str = "append") -> Job:
    return Job(
        id=0,
        name=name,
        target="log",
        action=action,
        args={},
        schedule=AtSchedule(due),
        ends_at=due + timedelta(hours=1),
        created_at=due,
        updated_at=due,
        next_run_at=due,
    )


def recurring(name: str, expression: str, now: datetime, life: timedelta = timedelta(hours=1)) -> Job:
    """A cron job armed from `now` (its first occurrence is the first after `now`), ending after `life`."""
    made = Job(
        id=0,
        name=name,
        target="log",
        action="append",
        args={},
        schedule=CronSchedule(CronSet.parse(expression), "UTC"),
        ends_at=now + life,
        created_at=now,
        updated_at=now,
    )
    return engine.arm(made, now)


def whole_second(instant: datetime) -> datetime:
    return instant.replace(microsecond=0) + timedelta(seconds=1)


def test_three_nodes_run_every_occurrence_of_a_thousand_one_shots_and_fifty_recurring_jobs_once(
    cluster: Cluster,
) -> None:
    cluster.start(3)
    node_ids = set(cluster.ids().values())
    # The thousand come due together at `due`. Each of the fifty fires every 5 seconds from the first
    # multiple of 5 seconds after the burst (armed at `due` + 3 s), and lives until 10.5 s after that
    # first occurrence: exactly three occurrences each.
    # 15 s of lead: a thousand separate inserts take 2 s on a quiet machine, and above 6 s on a loaded one.
    due = whole_second(datetime.now(UTC) + timedelta(seconds=15))
    shots = [cluster.store.insert(one_shot(f"shot-{number:04}", due)) for number in range(1000)]
    armed = due + timedelta(seconds=3)
    first = armed + timedelta(seconds=5 - armed.second % 5)
    life = first + timedelta(seconds=10.5) - armed
    every_5s = [
        cluster.store.insert(recurring(f"every-5s-{number:02}", "*/5 * * * * *", armed, life))
        for number in range(50)
    ]
    if datetime.now(UTC) >= due:
        pytest.fail("inserting the jobs took longer than the 15 s before they came due", pytrace=False)

    wait_for("the thousand one-shots to be done", lambda: cluster.store.counts()["done"] == 1000, 45)
    # Stopped once every job has ended, so that the stop interrupts nothing.
    wait_for(
        "the fifty recurring jobs to expire",
        lambda: cluster.store.counts()["expired"] == 50 and cluster.store.counts()["running"] == 0,
        45,
    )
    cluster.stop()

    fired = cluster.fired()
    assert fired and max(fired.values()) == 1, [key for key, count in fired.items() if count > 1][:10]
    recorded = cluster.store.runs(None, 100_000)
    unreceived = [run for run in recorded if (run.fire_id, str(run.attempt)) not in fired]
    assert not unreceived, unreceived[:5]  # the history holds no run that the target did not receive
    assert len(recorded) == len(fired)  # nor does it lack one
    for shot in shots:
        [run] = cluster.store.runs(shot.id)
        assert (run.outcome, run.attempt) == (Outcome.OK, 1)
    occurrences = [first, first + timedelta(seconds=5), first + timedelta(seconds=10)]
    for job in every_5s:
        assert job.next_run_at == first
        runs = sorted(cluster.store.runs(job.id), key=lambda run: run.scheduled_for)
        assert [run.scheduled_for for run in runs] == occurrences, job.name  # each once, none lost
        assert len({run.fire_id for run in runs}) == 3
        assert {run.outcome for run in runs} == {Outcome.OK}
    assert {run.node for run in recorded} <= node_ids


def test_a_node_killed_mid_run_has_its_runs_recorded_interrupted_by_the_others_who_carry_on(
    cluster: Cluster,
) -> None:
    now = datetime.now(UTC)
    due = whole_second(now + timedelta(seconds=4))
    slow = [cluster.store.insert(one_shot(f"slow-{number}", due, action="slow")) for number in range(4)]
    ticking = [
        cluster.store.insert(recurring(f"every-2s-{number}", "*/2 * * * * *", now)) for number in range(3)
    ]
    cluster.start(3)
    ids = cluster.ids()
    wait_for("the slow runs to start", lambda: len(slow_lines(cluster)) == 4, 30)

    # The victim is the node that holds the slow runs (the first to claim takes them all, mostly).
    holders = {job.id: job.in_flight.node for job in cluster.store.jobs(state=State.RUNNING) if job.in_flight}
    victim_id, _ = Counter(holders[job.id] for job in slow).most_common(1)[0]
    victim = next(node for node in cluster.nodes if ids.get(node.pid) == victim_id)
    held = {job.id for job in slow if holders[job.id] == victim_id}
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)

    def recovered() -> bool:
        return all(
            any(run.outcome is Outcome.INTERRUPTED for run in cluster.store.runs(job_id)) for job_id in held
        )

    took = wait_for("the killed node's runs to be recorded interrupted", recovered, 60)
    assert took < 60
    # The others carry on: new work is taken, and the recurring jobs keep firing.
    fresh = [cluster.store.insert(one_shot(f"after-{number}", datetime.now(UTC))) for number in range(20)]
    wait_for("the work added after the kill", lambda: all(cluster.store.runs(job.id) for job in fresh), 30)
    after = time.monotonic()
    wait_for("three more seconds of recurring firings", lambda: time.monotonic() - after > 3, 10)
    cluster.stop()

    fired = cluster.fired()
    assert fired and max(fired.values()) == 1, [key for key, count in fired.items() if count > 1]
    for job_id in held:
        [run] = cluster.store.runs(job_id)  # never run again
        assert run.outcome is Outcome.INTERRUPTED
        assert run.node == victim_id and victim_id in run.message
        final = cluster.store.get(job_id)
        assert final is not None and final.state is State.FAILED and final.in_flight is None
    assert len(slow_lines(cluster)) == len(set(slow_lines(cluster))) == 4
    for job in fresh:
        [run] = cluster.store.runs(job.id)
        assert run.outcome is Outcome.OK and run.node != victim_id
    for job in ticking:
        runs = cluster.store.runs(job.id)
        assert len({run.fire_id for run in runs}) == len(runs)
        assert any(run.node != victim_id and run.outcome is Outcome.OK for run in runs)
