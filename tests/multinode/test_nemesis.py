"""Never twice, under a nemesis: kills, pauses past the lease, cuts, hangs, lost COMMIT replies and a
PostgreSQL restart, on real `serve` nodes sharing one schema (issue 39's generalisation).

test_partition.py cuts one node off as it records its runs, once. This test is the Jepsen-style mix:
two or three real `cronwright serve` processes share a scratch schema, each behind a TCP proxy of its own
(tests/faults/pg_proxy.py), so that each can be cut off, stalled, or lose COMMIT replies on its own. The
jobs are those of test_partition.py (recurring, every 1 to 3 seconds, each run appending a `start` line
with its node, fire_id, attempt and scheduled_for, then an `end` line, to one file: the file is what
really ran), plus a recurring job with retries whose action fails its first attempt (and sometimes its
second) for some fire_ids, and a batch of one-shots due while the faults go on.

A nemesis, driven by the seed, then applies a sequence of faults, one at a time, each to a random node:

- kill: SIGKILL, then after a moment a new process in its place (a new node id);
- pause: SIGSTOP until the database shows its lease lapsed (lease 5 s, beat 1 s), then SIGCONT;
- cut: the proxy closes every connection and refuses new ones for a few seconds;
- hang: the proxy relays no byte either way, connections kept open, for a few seconds;
- cut at a write: the cut of test_partition.py, armed while the node runs a recurring job, to start as
  it sends `INSERT INTO runs `: once for 1.5 to 3 s, within the lease (issue 39's case: the node keeps
  the outcome in memory while its peers, taking it for alive, write overlap skips on the rows it
  holds; the code before the fix then starts a fire_id a second time), and once for 6 to 9 s, past the
  lease (the peers record the held runs interrupted);
- lost replies: the proxy loses the reply to the node's next COMMIT (once or twice), and with
  `refuse_after_cut` also refuses every connection a moment, so no read back can tell;
- once per seed, a restart of PostgreSQL itself: `pg_ctlcluster --skip-systemctl-redirect VERSION main
  restart` (then `pg_isready`). Where that is not available, or fails, or restarts some other server than
  the test's, it falls back to `pg_terminate_backend` on every backend of the nodes' connections (those of
  their proxies; the test's own are spared), and says so in its output (`postgres restart:` in the
  captured stdout, and the `postgres_restart` property of the test's report). The server is back before
  the test ends, whatever happens. NB: a real restart drops every connection to that server, so other
  tests running against it at that moment (another engineer's) see it too.

A cut or a hang longer than the lease, and every pause, makes a peer record the victim's runs
`interrupted` ("stopped renewing its lease"); a killed node's runs are recorded so too. The late outcomes
of those runs must not be recorded a second time, nor may any occurrence run again.

Then everything heals, the nodes go on until each job started two more occurrences (and every one-shot
has ended), and every node is stopped with SIGTERM: each must exit 0. The checker is test_partition.py's
(its History): no (fire_id, attempt) started twice; no fire_id for two instants; every start has its run
row and every run row its start, except a run that a peer recorded `interrupted` for a node whose lease
ran out before it started it (a claim that landed as its node died or stalled); each job's counters
account for each instant of its timetable exactly once (a job whose next attempt waits for its retry when
the nodes stop is in flight legitimately, and counted so). And more: every run row names the node that
started it, each one-shot ran at most once and ended done or failed, and every node that was not killed
exited 0. A failure names the fire_ids, what the nodes logged about them, and the nemesis's journal.

Each case is a seed (which picks the jobs, the faults, their victims and their lengths) and a number of
nodes; two cases keep the file within about three minutes on two cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from test_partition import LEASE_LAPSED, History, Start, every
from test_three_nodes import CRONWRIGHT, Cluster, one_shot, recurring, wait_for
from witnessed import witness_script, write_node_config

import pg
from cronwright.core.model import Job, Outcome, Run, State
from cronwright.errors import StoreError
from cronwright.store.postgres import PostgresStore
from faults.pg_proxy import CommitReplyDropper

LEASE_BEAT = 1  # seconds
LEASE_TTL = 5  # seconds: a pause past it takes a few seconds, and so may a cut or a hang
# What the proxy cuts at, in `cut at a write`: a node recording the outcome of a run (issue 39).
RUN_WRITE = b"INSERT INTO runs "
# How long a cut at a write waits for its node to record a run before it is given up (and said so).
STRIKE_WAIT = 20.0


@dataclass(frozen=True)
class Case:
    seed: int
    nodes: int

    def __str__(self) -> str:
        return f"seed-{self.seed}-{self.nodes}-nodes"


CASES = [Case(seed=39, nodes=3), Case(seed=40, nodes=2)]

KILL, PAUSE, CUT, HANG, CUT_AT_WRITE, LONG_CUT_AT_WRITE, LOSE_REPLIES, RESTART = (
    "kill",
    "pause",
    "cut",
    "hang",
    "cut at a write",
    "long cut at a write",
    "lost replies",
    "postgres restart",
)
NODE_FAULTS = [KILL, PAUSE, CUT, HANG, CUT_AT_WRITE, LONG_CUT_AT_WRITE, LOSE_REPLIES]


@dataclass(frozen=True)
class Move:
    """One fault of the nemesis. `seconds`: how long a killed node stays down, how far past the lease a
    pause lasts, how long a cut, a hang or a refusal after a lost reply lasts."""

    kind: str
    node: int  # -1 for the PostgreSQL restart, which strikes them all
    seconds: float
    calm: float  # seconds of calm before it
    replies: int = 1  # lost replies: how many
    refuse: bool = False  # lost replies: whether the proxy then refuses every connection a moment

    def __str__(self) -> str:
        if self.kind == RESTART:
            return RESTART
        if self.kind == LOSE_REPLIES:
            refusal = f", refusing connections {self.seconds:.1f}s after each" if self.refuse else ""
            replies = "1 COMMIT reply" if self.replies == 1 else f"{self.replies} COMMIT replies"
            return f"{self.kind} on node {self.node}: {replies} lost{refusal}"
        if self.kind == PAUSE:
            return f"{self.kind} node {self.node} until {self.seconds:.1f}s past its lease"
        if self.kind == KILL:
            return f"{self.kind} node {self.node}, down {self.seconds:.1f}s"
        return f"{self.kind} on node {self.node} for {self.seconds:.1f}s"


@dataclass(frozen=True)
class Plan:
    """What a seed decides."""

    schedules: list[tuple[str, int]]  # ("cron" or "every", period in seconds), one per plain job
    flaky: tuple[str, int, int]  # the job with retries: kind, period, max_attempts
    work_seconds: float  # how long each run lasts
    one_shots: int
    moves: list[Move]

    @staticmethod
    def of(case: Case) -> Plan:
        rng = random.Random(case.seed)
        schedules = [("cron", 1)] + [(rng.choice(["cron", "every"]), rng.choice([1, 2, 3])) for _ in range(3)]
        flaky = (rng.choice(["cron", "every"]), rng.choice([2, 3]), rng.choice([2, 3]))
        # Each fault once (the restart only once), and one more of them, in a random order.
        kinds = [*NODE_FAULTS, RESTART, rng.choice(NODE_FAULTS)]
        rng.shuffle(kinds)
        return Plan(
            schedules=schedules,
            flaky=flaky,
            work_seconds=rng.choice([0.3, 0.5, 0.7]),
            one_shots=rng.randint(50, 80),
            moves=[Plan._move(kind, case, rng) for kind in kinds],
        )

    @staticmethod
    def _move(kind: str, case: Case, rng: random.Random) -> Move:
        node = -1 if kind == RESTART else rng.randrange(case.nodes)
        calm = rng.uniform(0.5, 2.0)
        # Cuts and hangs from 2 to 7 s: shorter and longer than the 5 s lease. A cut at a write within the
        # lease is issue 39's: its node keeps the outcome in memory while the peer, taking it for alive,
        # writes overlap skips on the rows it holds (a job fires every second). A long one outlasts the
        # lease: the peer records the held runs interrupted, and their late outcomes must not count.
        seconds = {
            KILL: rng.uniform(0.5, 3.0),
            PAUSE: rng.uniform(0.5, 2.5),
            CUT: rng.uniform(2.0, 7.0),
            HANG: rng.uniform(2.0, 7.0),
            CUT_AT_WRITE: rng.uniform(1.5, 3.0),
            LONG_CUT_AT_WRITE: rng.uniform(6.0, 9.0),
            LOSE_REPLIES: rng.uniform(1.0, 3.0),
            RESTART: 0.0,
        }[kind]
        return Move(kind, node, seconds, calm, replies=rng.choice([1, 2]), refuse=rng.random() < 0.5)


@dataclass
class NemesisCluster(Cluster):
    """Nodes each behind a proxy of their own; node `i`'s processes are labelled `n<i>.<generation>`.

    Each run appends `start LABEL FIRE_ID ATTEMPT SCHEDULED_FOR PID` (the shell's pid, which leads its
    process group) to the log, works, then appends `end LABEL FIRE_ID ATTEMPT`; the `flaky` action then
    fails its first attempt for odd occurrences, and its second too for those ending in 5 or 9."""

    proxies: list[CommitReplyDropper] = field(default_factory=list)
    work_seconds: float = 0.5
    live: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)  # node index: its process
    generation: dict[int, int] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)  # pid: label
    node_ids: dict[str, str] = field(default_factory=dict)  # label: the node id it beat under

    def label(self, index: int) -> str:
        return f"n{index}.{self.generation[index]}"

    def config(self, index: int) -> Path:
        label = self.label(index)
        append = witness_script(label, self.log, self.work_seconds)
        flaky = (
            f'{append}; case "$CRONWRIGHT_FIRE_ID:$CRONWRIGHT_ATTEMPT" in *[13579]:1|*[59]:2) exit 3;; esac'
        )
        store = self.proxies[index].url(self.url)
        return write_node_config(
            self.folder / f"{label}.toml", store, LEASE_BEAT, LEASE_TTL, {"append": append, "flaky": flaky}
        )

    def launch(self, index: int) -> subprocess.Popen[bytes]:
        """Starts a new process as node `index` (a new generation, so a new label); see `await_beat`."""
        self.generation[index] = self.generation.get(index, -1) + 1
        label = self.label(index)
        with (self.folder / f"{label}.err").open("wb") as stderr:
            argv = [str(CRONWRIGHT), "--config", str(self.config(index)), "serve"]
            node = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        self.nodes.append(node)
        self.live[index] = node
        self.labels[node.pid] = label
        return node

    def await_beat(self, node: subprocess.Popen[bytes]) -> None:
        label = self.labels[node.pid]
        self.wait(f"{label} to beat", lambda: node.pid in self.ids(), 30)
        self.node_ids[label] = self.ids()[node.pid]

    def wait(self, what: str, check: Callable[[], bool], seconds: float) -> float:
        """wait_for, failing at once if a node that should live exits meanwhile; a store that does not
        answer (PostgreSQL restarting) is a check that does not hold yet."""

        def holds() -> bool:
            for index, node in self.live.items():
                code = node.poll()
                if code is not None:
                    label = self.labels[node.pid]
                    tail = (self.folder / f"{label}.err").read_text(errors="replace")[-3000:]
                    pytest.fail(f"node {index} ({label}) exited {code} while waiting for {what}:\n{tail}")
            try:
                return check()
            except (StoreError, psycopg.Error):
                return False

        return wait_for(what, holds, seconds)

    def hold(self, seconds: float, why: str) -> None:
        """Lets `seconds` pass (a fault's length, a calm between faults), checking the nodes meanwhile."""
        since = time.monotonic()
        self.wait(f"{why} ({seconds:.1f}s)", lambda: time.monotonic() - since >= seconds, seconds + 10)

    def starts(self) -> list[Start]:
        return [
            Start(line[1], line[2], int(line[3]), datetime.fromisoformat(line[4]))
            for line in self.lines()
            if line[0] == "start"
        ]

    def database_now(self) -> datetime:
        with pg.connect(self.url) as connection:
            row = connection.execute("SELECT now()").fetchone()
        assert row is not None and isinstance(row[0], datetime)
        return row[0]

    def live_ids(self) -> set[str]:
        return {self.node_ids[self.labels[node.pid]] for node in self.live.values()}

    def stop_all(self) -> dict[str, int | None]:
        """SIGTERM to each live node; returns each one's exit code (None: not within 30 s)."""
        for node in self.live.values():
            node.send_signal(signal.SIGTERM)
        codes: dict[str, int | None] = {}
        for node in self.live.values():
            try:
                codes[self.labels[node.pid]] = node.wait(30)
            except subprocess.TimeoutExpired:
                codes[self.labels[node.pid]] = None
        return codes

    def logged(self) -> Iterator[tuple[str, dict[str, object]]]:
        """Each entry the nodes logged (one JSON object a line), with the label of the node."""
        for path in sorted(self.folder.glob("n*.err")):
            for line in path.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if isinstance(entry, dict):
                        yield path.stem, entry

    def logged_about(self, fire_id: str) -> list[str]:
        """What the nodes logged about `fire_id`, for a failure message."""
        said = []
        for label, entry in self.logged():
            message = str(entry.get("message", ""))
            if entry.get("fire_id") == fire_id or message.startswith(f"{fire_id} "):
                if "event" in entry:  # an event names the fire_id in a field of its own
                    event = f"{fire_id} {entry['event']} {entry.get('outcome', '')}".rstrip()
                    message = f"{event}: {message}" if message else event
                said.append(f"{str(entry.get('time'))[11:23]} {label}: {message}")
        return sorted(said)

    def decided_about(self, job_id: int, fire_ids: list[str]) -> list[str]:
        """The skips the nodes logged for `job_id` within 5 s of what they logged about `fire_ids`, and
        its occurrences started for instants in that window (for a job whose counters are off): which
        instants were decided, by whom, and how."""
        times = [
            datetime.fromisoformat(str(entry["time"]))
            for _, entry in self.logged()
            if "time" in entry
            and any(
                entry.get("fire_id") == fire_id or str(entry.get("message", "")).startswith(f"{fire_id} ")
                for fire_id in fire_ids
            )
        ]
        if not times:
            return []
        since, until = min(times) - timedelta(seconds=5), max(times) + timedelta(seconds=5)
        said = []
        for label, entry in self.logged():
            if entry.get("job_id") != job_id or entry.get("event") != "job_skipped":
                continue
            if since <= datetime.fromisoformat(str(entry["time"])) <= until:
                said.append(
                    f"{str(entry['time'])[11:23]} {label}: job {job_id} skipped {entry.get('count')}"
                    f" ({entry.get('reason')}) from {str(entry.get('due'))[11:19]}"
                )
        for start in self.starts():
            if start.fire_id.split("-")[0] == str(job_id) and since <= start.scheduled_for <= until:
                said.append(
                    f"{start.scheduled_for.time().isoformat(timespec='milliseconds')} {start.node}: started"
                    f" {start.fire_id} attempt {start.attempt} (the time is the instant it was due for)"
                )
        return sorted(said)

    def end_leftovers(self) -> None:
        """Ends the runs that a killed node left behind: each shell leads a process group of its own."""
        for line in self.lines():
            if line[0] != "start" or len(line) < 6:
                continue
            pid = int(line[5])
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{pid}/stat").read_text()
                group = int(stat.rsplit(") ", 1)[1].split()[2])
                if group == pid and b"sh" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def nemesis_cluster(tmp_path: Path) -> Iterator[NemesisCluster]:
    with pg.scratch_url() as url:
        store = PostgresStore(url)
        made = NemesisCluster(url, tmp_path, store)
        try:
            yield made
        finally:
            try:
                for proxy in made.proxies:
                    proxy.resume()
                for node in made.nodes:
                    if node.poll() is None:
                        with contextlib.suppress(OSError):
                            node.send_signal(signal.SIGCONT)  # a stopped process dies only once resumed
                        node.kill()
                    node.wait(10)
                made.end_leftovers()
            finally:
                ensure_postgres(pg.server_url())  # whatever happened: the rest of the suite needs it
                store.close()
                for proxy in made.proxies:
                    proxy.close()


# -- PostgreSQL itself ----------------------------------------------------------------------------------


def postgres_answers(url: str) -> bool:
    parts = urlsplit(url)
    if shutil.which("pg_isready"):
        argv = ["pg_isready", "-q", "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432)]
        if subprocess.run(argv, check=False, timeout=10).returncode != 0:
            return False
    try:
        with pg.connect(url) as connection:
            connection.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def postmaster_started(url: str) -> datetime:
    with pg.connect(url) as connection:
        row = connection.execute("SELECT pg_postmaster_start_time()").fetchone()
    assert row is not None and isinstance(row[0], datetime)
    return row[0]


def cluster_command(action: str) -> list[str] | None:
    """pg_ctlcluster's command for `action` on the one local cluster, None where there is none."""
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if not shutil.which("pg_ctlcluster") or len(versions) != 1:
        return None
    return ["pg_ctlcluster", "--skip-systemctl-redirect", versions[0], "main", action]


def ensure_postgres(url: str) -> None:
    """Makes sure the test server answers (starting the local cluster if a restart left it down)."""
    if postgres_answers(url):
        return
    start = cluster_command("start")
    if start is not None:
        subprocess.run(start, check=False, capture_output=True, timeout=60)
    wait_for("PostgreSQL to answer again", lambda: postgres_answers(url), 60)


def restart_postgres(url: str, proxies: list[CommitReplyDropper]) -> str:
    """Restarts the test server; returns what was done. Falls back to terminating the nodes' backends."""
    before = postmaster_started(url)
    restart = cluster_command("restart")
    local = urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")
    why = "no pg_ctlcluster, or not one local cluster" if restart is None else "the server is not local"
    if restart is not None and local:
        try:
            done = subprocess.run(restart, check=False, capture_output=True, timeout=60)
            ensure_postgres(url)
            if done.returncode == 0 and postmaster_started(url) != before:
                return f"restarted PostgreSQL ({' '.join(restart)}, then pg_isready)"
            said = done.stderr.decode(errors="replace").strip()
            why = (
                f"{' '.join(restart)} exited {done.returncode}: {said}"
                if done.returncode
                else "pg_ctlcluster restarted a server other than the test's"
            )
        except (OSError, subprocess.SubprocessError) as error:
            ensure_postgres(url)
            why = f"{' '.join(restart)} failed: {error}"
    ports = sorted(port for proxy in proxies for port in proxy.relayed_ports())
    with pg.connect(url) as connection:
        row = connection.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND client_port = ANY(%s)",
            (ports,),
        ).fetchone()
    assert row is not None
    return f"pg_terminate_backend on the nodes' {row[0]} backends, no restart ({why})"


# -- the nemesis ------------------------------------------------------------------------------------


@dataclass
class Nemesis:
    cluster: NemesisCluster
    recurring: set[int] = field(default_factory=set)  # the ids of the recurring jobs
    journal: list[str] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)
    restarted: str = ""  # how PostgreSQL was restarted

    def note(self, text: str) -> None:
        wall = datetime.now(UTC).time().isoformat(timespec="milliseconds")
        self.journal.append(f"{wall} (+{time.monotonic() - self.began:5.1f}s) {text}")

    def apply(self, move: Move) -> None:
        self.cluster.hold(move.calm, "a calm between faults")
        if move.kind == RESTART:
            self.note("restarting PostgreSQL")
            self.restarted = restart_postgres(pg.server_url(), self.cluster.proxies)
            self.note(self.restarted)
            return
        node = self.cluster.live[move.node]
        label = self.cluster.labels[node.pid]
        proxy = self.cluster.proxies[move.node]
        {
            KILL: self._kill,
            PAUSE: self._pause,
            CUT: self._cut,
            HANG: self._hang,
            CUT_AT_WRITE: self._cut_at_write,
            LONG_CUT_AT_WRITE: self._cut_at_write,
            LOSE_REPLIES: self._lose_replies,
        }[move.kind](move, node, label, proxy)

    def _kill(self, move: Move, node: subprocess.Popen[bytes], label: str, _: CommitReplyDropper) -> None:
        del self.cluster.live[move.node]
        node.send_signal(signal.SIGKILL)
        node.wait(10)
        self.note(f"SIGKILL {label} ({self.cluster.node_ids[label]})")
        self.cluster.hold(move.seconds, f"{label} to stay down")
        again = self.cluster.launch(move.node)
        self.cluster.await_beat(again)
        fresh = self.cluster.labels[again.pid]
        self.note(f"node {move.node} restarted as {fresh} ({self.cluster.node_ids[fresh]})")

    def _pause(self, move: Move, node: subprocess.Popen[bytes], label: str, _: CommitReplyDropper) -> None:
        node_id = self.cluster.node_ids[label]
        node.send_signal(signal.SIGSTOP)
        self.note(f"SIGSTOP {label}")
        past = timedelta(seconds=LEASE_TTL + move.seconds)

        def lapsed() -> bool:
            beats = {beat.node: beat.beat_at for beat in self.cluster.store.beats()}
            return node_id not in beats or self.cluster.database_now() - beats[node_id] > past

        try:
            self.cluster.wait(f"{label}'s lease to lapse, {move.seconds:.1f}s past", lapsed, LEASE_TTL + 30)
        finally:
            node.send_signal(signal.SIGCONT)
        self.note(f"SIGCONT {label}")

    def _cut(self, move: Move, _: subprocess.Popen[bytes], label: str, proxy: CommitReplyDropper) -> None:
        proxy.cut()
        self.note(f"cut {label} off")
        self.cluster.hold(move.seconds, f"the cut of {label}")
        proxy.heal()
        self.note(f"healed {label}")

    def _hang(self, move: Move, _: subprocess.Popen[bytes], label: str, proxy: CommitReplyDropper) -> None:
        proxy.hang()
        self.note(f"hang {label}'s connections")
        self.cluster.hold(move.seconds, f"the hang of {label}")
        proxy.resume()
        self.note(f"resumed {label}'s connections")

    def _cut_at_write(
        self, move: Move, _: subprocess.Popen[bytes], label: str, proxy: CommitReplyDropper
    ) -> None:
        # Armed while the node runs a recurring job (within 10 s, else anyway), as test_partition.py does:
        # that run's outcome is then caught by the cut, and its row is one that peers write skips on
        # (a one-shot's is not).
        node_id, since = self.cluster.node_ids[label], time.monotonic()
        self.cluster.wait(
            f"{label} to run a recurring job, or 10s",
            lambda: (
                time.monotonic() - since > 10
                or any(job.id in self.recurring for job in self.cluster.store.held(node_id))
            ),
            20,
        )
        proxy.cut_when_sent(RUN_WRITE)
        self.note(f"armed a cut of {label} at its next run write")
        since = time.monotonic()
        self.cluster.wait(
            f"{label} to record a run, or {STRIKE_WAIT:.0f}s",
            lambda: proxy.struck.is_set() or time.monotonic() - since > STRIKE_WAIT,
            STRIKE_WAIT + 10,
        )
        if not proxy.struck.is_set():
            proxy.restore()
            self.note(f"{label} recorded no run in {STRIKE_WAIT:.0f}s: the cut is disarmed")
            return
        self.note(f"cut {label} off as it recorded a run")
        self.cluster.hold(move.seconds, f"the cut of {label}")
        proxy.heal()
        self.note(f"healed {label}")

    def _lose_replies(
        self, move: Move, _: subprocess.Popen[bytes], label: str, proxy: CommitReplyDropper
    ) -> None:
        for _lost in range(move.replies):
            if not self._lose_a_reply(proxy, label, move.refuse):
                self.note(f"{label} committed nothing in 10s: no reply lost")
                return
            self.note(f"lost the reply to a COMMIT of {label}" + (", refusing it" if move.refuse else ""))
            if move.refuse:
                self.cluster.hold(move.seconds, f"the refusal of {label}")
            proxy.restore()
            if move.refuse:
                self.note(f"let {label} connect again")

    def _lose_a_reply(self, proxy: CommitReplyDropper, label: str, refuse: bool) -> bool:
        """Loses the reply to the node's next COMMIT, if it commits within 10 s; says whether it did."""
        cuts, since = proxy.cuts, time.monotonic()
        proxy.lose_commit_replies(1, refuse_after_cut=refuse)
        self.cluster.wait(
            f"{label} to commit, or 10s", lambda: proxy.cuts > cuts or time.monotonic() - since > 10, 20
        )
        if proxy.cuts == cuts:
            proxy.restore()
            return False
        return True

    def heal_all(self) -> None:
        for proxy in self.cluster.proxies:
            proxy.restore()
            proxy.resume()
        for node in self.cluster.live.values():
            node.send_signal(signal.SIGCONT)
        self.note("healed every node")


# -- the test ---------------------------------------------------------------------------------------


def plain_job(kind: str, period: int, number: int, now: datetime) -> Job:
    name = f"{kind}-{period}s-{number}"
    expression = "* * * * * *" if period == 1 else f"*/{period} * * * * *"
    made = recurring(name, expression, now) if kind == "cron" else every(name, timedelta(seconds=period), now)
    # No breaker: a run of interrupted occurrences must not pause a job (the counters check wants it on).
    return made.evolve(breaker_threshold=0)


def waiting_retries_set_aside(final: dict[int, Job]) -> tuple[dict[int, Job], list[str]]:
    """The jobs as History's counters check expects them (active, nothing in flight), with the ones that
    stopped waiting for a retry set aside: such an occurrence is started and counted already, and its
    next attempt, never started, waits for a pass. Also says which they were."""
    settled: dict[int, Job] = {}
    waiting: list[str] = []
    for job_id, job in final.items():
        if (
            job.state is State.RUNNING
            and job.flights
            and all(flight.node is None and flight.retry_at is not None for flight in job.flights)
        ):
            waiting += [f"{flight.fire_id} attempt {flight.attempt + 1}" for flight in job.flights]
            job = job.evolve(state=State.ACTIVE, in_flight=None, alongside=())
        settled[job_id] = job
    return settled, waiting


def runs_on_other_nodes(
    starts: list[Start], runs: list[Run], node_ids: dict[str, str], implicated: set[str]
) -> list[str]:
    """Run rows that name another node than the one whose process started the attempt (a peer records
    a lapsed node's runs under that node's id). An attempt started twice is told of already."""
    twice = {key for key, count in Counter((s.fire_id, s.attempt) for s in starts).items() if count > 1}
    started_on = {(start.fire_id, start.attempt): start.node for start in starts}
    for key in twice:
        del started_on[key]
    problems: list[str] = []
    for run in runs:
        label = started_on.get((run.fire_id, run.attempt))
        if label is not None and node_ids.get(label) != run.node:
            implicated.add(run.fire_id)
            problems.append(
                f"{run.fire_id} attempt {run.attempt} started on {label} ({node_ids.get(label)}), recorded"
                f" {run.outcome.value} under {run.node}"
            )
    return problems


def never_seen(final: dict[int, Job], starts: list[Start], runs: list[Run]) -> dict[int, list[str]]:
    """By job, the fire_ids up to its `occurrences` that neither started nor were recorded."""
    seen = {start.fire_id for start in starts} | {run.fire_id for run in runs}
    unseen = {
        job_id: [f"{job_id}-{n}" for n in range(1, job.occurrences + 1) if f"{job_id}-{n}" not in seen]
        for job_id, job in final.items()
    }
    return {job_id: fire_ids for job_id, fire_ids in unseen.items() if fire_ids}


def one_shots_wrong(
    shots: dict[int, Job], starts: list[Start], runs: list[Run], implicated: set[str]
) -> list[str]:
    """Each one-shot started at most once, and ended done (having started) or failed."""
    started = Counter(int(start.fire_id.split("-")[0]) for start in starts)
    recorded: dict[int, list[Run]] = {}
    for run in runs:
        recorded.setdefault(run.job_id, []).append(run)
    problems: list[str] = []
    for job_id, job in shots.items():
        before = len(problems)
        rows = ", ".join(f"{run.fire_id} {run.outcome.value}" for run in recorded.get(job_id, []))
        what = f"one-shot {job_id} '{job.name}' ended {job.state.value} (runs: {rows or 'none'})"
        if started[job_id] > 1:
            problems.append(f"{what}, started {started[job_id]} times")
        elif job.state not in (State.DONE, State.FAILED) or job.in_flight is not None:
            problems.append(f"{what}, in flight: {job.in_flight}")
        elif job.state is State.DONE and started[job_id] != 1:
            problems.append(f"{what}, but never started")
        if len(problems) > before:
            implicated.update(run.fire_id for run in recorded.get(job_id, []))
            implicated.update(start.fire_id for start in starts if start.fire_id.startswith(f"{job_id}-"))
    return problems


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_nemesis_of_kills_pauses_cuts_hangs_lost_replies_and_a_restart_runs_nothing_twice(
    nemesis_cluster: NemesisCluster, case: Case, record_property: Callable[[str, object], None]
) -> None:
    cluster, store = nemesis_cluster, nemesis_cluster.store
    plan = Plan.of(case)
    cluster.work_seconds = plan.work_seconds
    cluster.proxies = [CommitReplyDropper(pg.server_url()) for _ in range(case.nodes)]

    now = datetime.now(UTC)
    jobs = [
        (plain_job(kind, period, number, now), period) for number, (kind, period) in enumerate(plan.schedules)
    ]
    kind, period, max_attempts = plan.flaky
    flaky = plain_job(kind, period, len(jobs), now).evolve(
        name=f"flaky-{kind}-{period}s", action="flaky", max_attempts=max_attempts, retry_backoff_ms=300
    )
    periods: dict[int, int] = {}
    armed: dict[int, Job] = {}
    for job, every_seconds in [*jobs, (flaky, period)]:
        inserted = store.insert(job)
        periods[inserted.id], armed[inserted.id] = every_seconds, inserted

    nodes = [cluster.launch(index) for index in range(case.nodes)]
    for node in nodes:
        cluster.await_beat(node)
    nemesis = Nemesis(cluster, set(armed))
    nemesis.note(
        f"{case}: {', '.join(f'{label} is {cluster.node_ids[label]}' for label in cluster.node_ids)}"
    )
    cluster.wait(
        "every node to run something", lambda: {s.node for s in cluster.starts()} >= {*cluster.node_ids}, 20
    )

    # The one-shots come due while the faults go on (about a minute of them), spread out.
    rng = random.Random(f"{case.seed}-one-shots")
    due = datetime.now(UTC)
    shots = [
        store.insert(one_shot(f"shot-{number:03}", due + timedelta(seconds=rng.uniform(1.0, 50.0))))
        for number in range(plan.one_shots)
    ]

    try:
        for move in plan.moves:
            nemesis.apply(move)
    finally:
        nemesis.heal_all()
        record_property("postgres_restart", nemesis.restarted)
        sys.stdout.write(f"postgres restart: {nemesis.restarted or 'none'}\nplan:\n  ")
        sys.stdout.write("\n  ".join(map(str, plan.moves)) + "\nnemesis journal:\n  ")
        sys.stdout.write("\n  ".join(nemesis.journal) + "\n")

    # Every node beats again; whatever a dead or stalled node held is recorded by a peer; each job starts
    # two more occurrences; and every one-shot has ended.
    healed_at = cluster.database_now()
    cluster.wait(
        "every live node to beat after the heal",
        lambda: {beat.node for beat in store.beats() if beat.beat_at > healed_at} >= cluster.live_ids(),
        30,
    )

    def orphans() -> list[str]:
        live = cluster.live_ids()
        rows = store.get_many([*armed, *(shot.id for shot in shots)]).values()
        return [f.fire_id for job in rows for f in job.flights if f.node is not None and f.node not in live]

    cluster.wait("the runs of the nodes gone to be recorded by the others", lambda: not orphans(), 30)

    def two_more_each() -> bool:
        after = Counter(
            start.fire_id.split("-")[0] for start in cluster.starts() if start.scheduled_for > healed_at
        )
        return all(after[str(job_id)] >= 2 for job_id in armed)

    cluster.wait("each job to start two occurrences due after the heal", two_more_each, 30)

    def shots_ended() -> bool:
        return all(not job.state.live for job in store.get_many([shot.id for shot in shots]).values())

    cluster.wait("every one-shot to end", shots_ended, 60)
    nemesis.note("stopping every node")
    codes = cluster.stop_all()
    cluster.live.clear()

    starts = cluster.starts()
    runs = store.runs(None, 100_000)
    final, waiting = waiting_retries_set_aside(store.get_many(list(armed)))
    history = History(starts, runs, armed, final, periods)
    shot_rows = store.get_many([shot.id for shot in shots])
    found = {
        "an attempt started twice": history.attempts_started_twice(),
        "a fire_id was used for two instants": history.fire_ids_used_twice(),
        "what ran and the store's history disagree": history.starts_and_runs_apart(),
        "a job's counters do not account for each instant once": history.miscounted(),
        "a run row names another node than the one that ran it": runs_on_other_nodes(
            starts, runs, cluster.node_ids, history.implicated
        ),
        "a one-shot ran twice, or did not end": one_shots_wrong(shot_rows, starts, runs, history.implicated),
        "a node did not exit 0 on SIGTERM": [
            f"{label} exited {'nothing within 30 s' if code is None else code}; it logged last:\n"
            + (cluster.folder / f"{label}.err").read_text(errors="replace")[-1500:]
            for label, code in codes.items()
            if code != 0
        ],
    }
    peer_interrupted = sum(
        1 for run in runs if run.outcome is Outcome.INTERRUPTED and LEASE_LAPSED in run.message
    )
    sys.stdout.write(
        f"{len(starts)} attempts started, {len(runs)} recorded ({peer_interrupted} interrupted by a peer),"
        f" {len(shots)} one-shots; waiting for a retry at the stop: {waiting or 'none'}\n"
    )
    report = [f"{what}:\n  " + "\n  ".join(problems) for what, problems in found.items() if problems]
    if report:
        gaps = (
            never_seen(final, starts, runs)
            if found["a job's counters do not account for each instant once"]
            else {}
        )
        history.implicated.update(fire_id for fire_ids in gaps.values() for fire_id in fire_ids)
        logged = [line for fire_id in sorted(history.implicated) for line in cluster.logged_about(fire_id)]
        logged += [
            line for job_id, fire_ids in gaps.items() for line in cluster.decided_about(job_id, fire_ids)
        ]
        pytest.fail(
            f"{case}, PostgreSQL: {nemesis.restarted}\n"
            + "\n".join(report)
            + ("\nwhat the nodes logged about those fire_ids:\n  " + "\n  ".join(logged) if logged else "")
            + "\nthe nemesis:\n  "
            + "\n  ".join(nemesis.journal),
            pytrace=False,
        )
