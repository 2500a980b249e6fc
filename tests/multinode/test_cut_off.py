"""Never twice, across an outage: a real `cronwright serve` cut off from PostgreSQL, and let back in.

The node that is cut off (the victim) logs in as a role of its own; the others log in as the test's
role. Cutting it off is `ALTER ROLE ... NOLOGIN` and `pg_terminate_backend()` on every connection of
that role: the process stays up, its runs go on, but it can neither read nor write the store, nor
renew its lease, nor hear NOTIFY. Letting it back in is `ALTER ROLE ... LOGIN`.

The cluster, its configs and its log are those of test_three_nodes.py.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from psycopg import sql
from test_three_nodes import (
    CRONWRIGHT,
    Cluster,
    kill_sleepers,
    one_shot,
    recurring,
    slow_lines,
    wait_for,
    whole_second,
)

import pg
from cronwright.core.model import Outcome, State
from cronwright.store.postgres import PostgresStore

# How long the victim's slow runs last: past the lease (5 s), the others' recovery, and the victim's
# return (its failed passes are retried after 1, 2, 4, 8 s), so that their results arrive late.
SLOW_SECONDS = 20


class CutOffCluster(Cluster):
    """A cluster whose node 0 logs in as `role`, and whose slow action lasts SLOW_SECONDS."""

    role: str = ""

    def config(self, index: int) -> Path:
        path = super().config(index)
        text = path.read_text().replace("exec /bin/sleep 30", f"exec /bin/sleep {SLOW_SECONDS}")
        if index == 0:
            text = text.replace(f'store = "{self.url}"', f'store = "{as_role(self.url, self.role)}"')
            assert self.role in text
        path.write_text(text)
        return path

    def launch(self, index: int) -> subprocess.Popen[bytes]:
        """Starts node `index` (its own config and stderr file) and waits until it beats."""
        stderr = (self.folder / f"node-{index}.err").open("wb")
        with stderr:
            argv = [str(CRONWRIGHT), "--config", str(self.config(index)), "serve"]
            node = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        self.nodes.append(node)
        wait_for(f"node {index} to beat", lambda: node.pid in self.ids(), 30)
        return node

    def lock_out(self, locked: bool) -> datetime:
        """Cuts the role off (ending its connections), or lets it back; returns the database's now."""
        with pg.connect(self.url) as connection:
            verb = "NOLOGIN" if locked else "LOGIN"
            connection.execute(sql.SQL("ALTER ROLE {} " + verb).format(sql.Identifier(self.role)))
            if locked:
                connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (self.role,)
                )
            row = connection.execute("SELECT now()").fetchone()
        assert row is not None
        instant = row[0]
        assert isinstance(instant, datetime), instant
        return instant


def as_role(url: str, role: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)


@pytest.fixture
def cut_off_cluster(tmp_path: Path) -> Iterator[CutOffCluster]:
    with pg.scratch_url() as url:
        if "postgresql://postgres@" not in url:
            pytest.skip(
                "this test logs in as a role of its own, so it needs a URL of the form postgresql://postgres@"
            )
        store = PostgresStore(url)  # first: it makes the schema, which the role is then granted
        made = CutOffCluster(url, tmp_path, store)
        made.role = f"cw_role_{secrets.token_hex(6)}"
        schema = url.rsplit("schema=", 1)[1]
        with pg.connect(url) as connection:
            connection.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(made.role)))
            for grant in (
                "GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}",
                "GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}",
                "GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
            ):
                connection.execute(
                    sql.SQL(grant).format(schema=sql.Identifier(schema), role=sql.Identifier(made.role))
                )
        try:
            yield made
        finally:
            for node in made.nodes:
                if node.poll() is None:
                    node.kill()
                    node.wait(10)
            kill_sleepers(made)
            store.close()
            with pg.connect(url) as connection:
                connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (made.role,)
                )
                connection.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(made.role)))
                connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(made.role)))


def stop(cluster: Cluster, node: subprocess.Popen[bytes]) -> None:
    """SIGTERM; the node must finish its runs and exit 0."""
    node.send_signal(signal.SIGTERM)
    index = cluster.nodes.index(node)
    assert node.wait(30) == 0, (cluster.folder / f"node-{index}.err").read_text()


def test_a_node_cut_off_from_the_database_and_back_runs_nothing_twice_and_keeps_working(
    cut_off_cluster: CutOffCluster,
) -> None:
    cluster = cut_off_cluster
    store = cluster.store
    now = datetime.now(UTC)
    due = whole_second(now + timedelta(seconds=3))
    slow = [store.insert(one_shot(f"slow-{number}", due, action="slow")) for number in range(3)]
    ticking = [store.insert(recurring(f"every-2s-{number}", "*/2 * * * * *", now)) for number in range(3)]

    # The victim starts alone, so that it holds every slow run; then the others join.
    victim = cluster.launch(0)
    victim_id = cluster.ids()[victim.pid]
    wait_for("the slow runs to start", lambda: len(slow_lines(cluster)) == 3, 20)
    holders = {job.id: job.in_flight.node for job in store.jobs(state=State.RUNNING) if job.in_flight}
    assert all(holders.get(job.id) == victim_id for job in slow), holders
    others = [cluster.launch(1), cluster.launch(2)]

    # Cut off while its slow runs go on. Its lease lapses; the others record them interrupted.
    cluster.lock_out(True)

    def interrupted() -> bool:
        return all(any(run.outcome is Outcome.INTERRUPTED for run in store.runs(job.id)) for job in slow)

    wait_for("the cut-off node's slow runs to be recorded interrupted", interrupted, 45)
    assert victim.poll() is None  # cut off is not dead: the process goes on
    # Meanwhile the others work, and the victim can claim nothing.
    during = [store.insert(one_shot(f"during-{number}", datetime.now(UTC))) for number in range(20)]
    wait_for("the work added during the outage", lambda: all(store.runs(job.id) for job in during), 15)
    assert all(run.node != victim_id for job in during for run in store.runs(job.id))
    assert len(slow_lines(cluster)) == 3  # and nobody ran a slow job again

    # Back: it beats again (its failed passes are retried with backoff), and is still the same node.
    back_at = cluster.lock_out(False)
    wait_for(
        "the cut-off node to beat again",
        lambda: any(beat.node == victim_id and beat.beat_at > back_at for beat in store.beats()),
        25,
    )
    # Its slow runs finish after they were recorded interrupted: the late results must break nothing.
    sleepers = [int(line[2]) for line in cluster.lines() if len(line) == 3]
    wait_for(
        "the slow runs to end",
        lambda: not any(_alive(pid) for pid in sleepers),
        SLOW_SECONDS + 5,
    )
    assert victim.poll() is None

    # It keeps claiming work: with the others stopped, everything new is its to run.
    for node in others:
        stop(cluster, node)
    after = [store.insert(one_shot(f"after-{number}", datetime.now(UTC))) for number in range(20)]
    wait_for("the work added after the return", lambda: all(store.runs(job.id) for job in after), 15)
    stop(cluster, victim)

    fired = cluster.fired()
    assert fired and max(fired.values()) == 1, [key for key, count in fired.items() if count > 1]
    recorded = store.runs(None, 100_000)
    attempts = Counter((run.job_id, run.fire_id, run.attempt) for run in recorded)
    assert max(attempts.values()) == 1  # one history row per attempt
    assert {(run.fire_id, str(run.attempt)) for run in recorded} == set(fired)  # and one per received
    assert len(recorded) == len(fired)
    for job in slow:
        [run] = store.runs(job.id)  # recorded once, interrupted; the late result added no second row
        assert run.outcome is Outcome.INTERRUPTED
        assert run.node == victim_id and victim_id in run.message
        final = store.get(job.id)
        assert final is not None and final.state is State.FAILED and final.in_flight is None
    assert sorted(slow_lines(cluster)) == sorted({*slow_lines(cluster)})
    for job in after:
        [run] = store.runs(job.id)
        assert run.outcome is Outcome.OK and run.node == victim_id
    for job in ticking:
        runs = store.runs(job.id)
        assert any(run.node != victim_id and run.outcome is Outcome.OK for run in runs)
    errors = " ".join((cluster.folder / "node-0.err").read_text().split())  # unwrapped
    assert "Traceback" not in errors, errors[-3000:]
    # Each late result did reach the victim's engine, after its return, and was reported, not recorded.
    assert errors.count("finished after it was recorded interrupted") == len(slow), errors[-3000:]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False
