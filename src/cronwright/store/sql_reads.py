"""The job and run reads that the SQL stores share, written once: each store brings its session and its
dialect's named queries (sql/<dialect>/queries.sql)."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from cronwright.core.audit import AuditEntry, read_entry
from cronwright.core.model import Job, Run, State
from cronwright.errors import StoreCorrupt
from cronwright.store.base import same_record, unknown_run

log = logging.getLogger("cronwright.store")

LIVE = tuple(state.value for state in State if state.live)
# Ids per `IN (...)` of get_many: far below SQLite's limit on bound parameters (32,766 since 3.32).
_IDS_PER_READ = 500


class SqlJobReads(ABC):
    """Mixin for a store whose `jobs` table has the columns id, version, data, name, state, target,
    created_by, dedupe_key, wake_at and deleted. `_p` is the driver's placeholder (`?` or `%s`), and
    `_queries` the dialect's named statements. Its hooks are abstract: a store that lacks one fails when it
    is made, not at its first read.

    A read of many rows leaves out a row that cannot be read (written by hand behind the store's back,
    say) rather than failing whole: one broken row must neither stop the scheduler nor hide every other
    row. It is logged once, and kept in `unreadable` until a read finds it whole again. A read of one
    row by id or name still fails on it, with StoreCorrupt: that row is what was asked for.
    """

    _p: str
    _queries: Mapping[str, str]
    _unreadable: dict[int, str]

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _read_job(self, row: Sequence[Any]) -> Job: ...

    @abstractmethod
    def _read_run(self, data: Any, seq: int) -> Run: ...

    def _same_run(self, row: Sequence[Any] | None, run: Run) -> bool:
        """Whether `row` (seq, data) of the runs table is this very record of `run`'s attempt."""
        try:
            return row is not None and same_record(self._read_run(row[1], row[0]), run)
        except StoreCorrupt:
            return False  # a damaged record of the attempt is still a record of it

    @abstractmethod
    def _instant(self, moment: datetime) -> object:
        """`moment` as the wake_at column holds it."""
        ...

    @abstractmethod
    def _decoded(self, data: Any) -> Any:
        """A JSON column's value as read (SQLite gives text, PostgreSQL the value)."""
        ...

    @property
    def unreadable(self) -> dict[int, str]:
        if self._unreadable:
            # A row removed by hand meanwhile is no longer left out of anything: forget it.
            ids = list(self._unreadable)
            with self._reading() as connection:
                rows = connection.execute(
                    self._queries["live_ids_among"].format(ids=self._marks(ids)), ids
                ).fetchall()
            present = {row[0] for row in rows}
            for job_id in ids:
                if job_id not in present:
                    self._unreadable.pop(job_id, None)
        return dict(self._unreadable)

    def _marks(self, values: Sequence[object]) -> str:
        """One placeholder per value, for an `IN (...)`: the SQL gets only placeholders, and every value
        is bound as a parameter."""
        return ", ".join([self._p] * len(values))

    def _read_jobs(self, rows: Iterable[Sequence[Any]]) -> list[Job]:
        jobs: list[Job] = []
        for row in rows:
            try:
                job = self._read_job(row)
            except StoreCorrupt as err:
                if self._unreadable.get(row[0]) != str(err):
                    log.warning("left out of reads until it is repaired: %s", err)
                self._unreadable[row[0]] = str(err)
                continue
            if self._unreadable:
                self._unreadable.pop(job.id, None)
            jobs.append(job)
        return jobs

    def _read_up_to(self, query: str, params: Sequence[object], limit: int) -> list[Job]:
        """The first `limit` readable jobs of `query` (which ends before its LIMIT). Rows known to be
        unreadable take no share of the limit: the read takes that many more, and reads again when it met
        new ones, so they never hide the rows behind them (from a pass, or from the next page)."""
        limit = max(limit, 0)
        while True:
            known = len(self._unreadable)
            with self._reading() as connection:
                rows = connection.execute(f"{query} LIMIT {self._p}", (*params, limit + known)).fetchall()
            jobs = self._read_jobs(rows)
            if len(self._unreadable) <= known or len(rows) < limit + known:
                return jobs[:limit]

    def due(self, now: datetime, limit: int) -> list[Job]:
        return self._read_up_to(self._queries["due"], (self._instant(now),), limit)

    def held(self, node: str) -> list[Job]:
        with self._reading() as connection:
            rows = connection.execute(self._queries["held"], (node, State.RUNNING.value)).fetchall()
        return self._read_jobs(rows)

    def _one(self, query: str, value: object) -> Job | None:
        with self._reading() as connection:
            row = connection.execute(self._queries[query], (value,)).fetchone()
        return None if row is None else self._read_job(row)

    def get(self, job_id: int) -> Job | None:
        return self._one("live_job_by_id", job_id)

    def get_many(self, job_ids: Sequence[int]) -> dict[int, Job]:
        wanted = sorted(set(job_ids))
        found: dict[int, Job] = {}
        with self._reading() as connection:
            for start in range(0, len(wanted), _IDS_PER_READ):
                chunk = wanted[start : start + _IDS_PER_READ]
                query = self._queries["live_jobs_by_ids"].format(ids=self._marks(chunk))
                rows = connection.execute(query, chunk).fetchall()
                found.update((job.id, job) for job in self._read_jobs(rows))
        return found

    def find(self, name: str) -> Job | None:
        return self._one("live_job_by_name", name)

    def with_dedupe_key(self, key: str) -> list[tuple[Job, bool]]:
        with self._reading() as connection:
            rows = connection.execute(self._queries["jobs_with_dedupe_key"], (key,)).fetchall()
        # Strict: a keyed row left out would let a `once` key be used a second time.
        return [(self._read_job(row), bool(row[3])) for row in rows]

    def jobs(
        self,
        state: State | None = None,
        target: str | None = None,
        created_by: str | None = None,
        *,
        after_name: str | None = None,
        limit: int | None = None,
    ) -> list[Job]:
        query = self._queries["live_jobs"]
        params: list[str | int] = []
        if created_by is not None:
            # With `NOT deleted`, this matches the partial index jobs_created_by: a source's own rows only.
            query += f" AND created_by = {self._p}"
            params.append(created_by)
        if state is not None:
            query += f" AND state = {self._p}"
            params.append(state.value)
        if target is not None:
            query += f" AND target = {self._p}"
            params.append(target)
        if after_name is not None:
            query += f" AND name > {self._p}"
            params.append(after_name)
        query += " ORDER BY name"
        if limit is not None:
            return self._read_up_to(query, params, limit)
        with self._reading() as connection:
            rows = connection.execute(query, params).fetchall()
        return self._read_jobs(rows)

    def count_live(self, created_by: str) -> int:
        with self._reading() as connection:
            query = self._queries["count_live"].format(live=self._marks(LIVE))
            row = connection.execute(query, (created_by, *LIVE)).fetchone()
        return int(row[0]) if row else 0

    def backfills_waiting(self, created_by: str) -> int:
        with self._reading() as connection:
            row = connection.execute(self._queries["backfills_waiting"], (created_by,)).fetchone()
        return int(row[0]) if row else 0

    def counts(self, created_by: str | None = None) -> dict[str, int]:
        counts = {state.value: 0 for state in State}
        with self._reading() as connection:
            if created_by is None:
                rows = connection.execute(self._queries["counts"]).fetchall()
            else:
                rows = connection.execute(self._queries["counts_of_source"], (created_by,)).fetchall()
        counts.update({str(state): int(number) for state, number in rows})
        return counts

    def first_by_id(self, limit: int) -> list[Job]:
        return self._read_up_to(self._queries["jobs_by_id"], (), limit)

    def first_versions_by_id(self, limit: int) -> list[tuple[int, int]]:
        """The id and version of each of `first_by_id(limit)`'s jobs, read from two columns and decoding
        none: a reader that keeps what it decoded (the per-job metrics) decodes again only the jobs whose
        version moved. Rows known to be unreadable are left out, as `first_by_id` leaves them out."""
        limit = max(limit, 0)
        skip = set(self._unreadable)
        statement = self._queries["job_versions_by_id"]
        query = f"{statement} LIMIT {self._p}"
        with self._reading() as connection:
            rows = connection.execute(query, (limit + len(skip),)).fetchall()
        return [(int(job_id), int(version)) for job_id, version in rows if job_id not in skip][:limit]

    def runs(
        self,
        job_id: int | None = None,
        limit: int = 100,
        before: int | None = None,
        *,
        created_by: str | None = None,
    ) -> list[Run]:
        p = self._p
        where: list[str] = [] if job_id is None else [f"runs.job_id = {p}"]
        params: list[object] = [] if job_id is None else [job_id]
        with self._reading() as connection:
            if before is not None:
                cursor = connection.execute(self._queries["run_finished_at"], (before,)).fetchone()
                if cursor is None:
                    raise unknown_run(before)
                # After the cursor in (finished_at DESC, seq DESC), written so the index's range applies.
                where.append(f"runs.finished_at <= {p} AND (runs.finished_at < {p} OR runs.seq < {p})")
                params += [cursor[0], cursor[0], before]
            if created_by is not None:
                after = "".join(f" AND {condition}" for condition in where)
                query = self._queries["runs_of_source"].format(after=after)
                params = [created_by, *params]
            else:
                clause = f" WHERE {' AND '.join(where)}" if where else ""
                query = self._queries["runs"].format(where=clause)
            rows = connection.execute(query, (*params, max(limit, 0))).fetchall()
        return [self._read_run(data, seq) for seq, data in rows]

    def audit(
        self,
        *,
        reader: str | None = None,
        source: str | None = None,
        job_id: int | None = None,
        name: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        p = self._p
        where: list[str] = []
        params: list[object] = []
        for column, value in (("source", source), ("job_id", job_id), ("name", name)):
            if value is not None:
                where.append(f"{column} = {p}")
                params.append(value)
        if before is not None:
            where.append(f"seq < {p}")
            params.append(before)
        page = max(limit, 0)
        if reader is None:
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            query, bound = self._queries["audit"].format(where=clause), (*params, page)
        else:
            rest = "".join(f" AND {condition}" for condition in where)
            query = self._queries["audit_of_reader"].format(rest=rest)
            bound = (reader, *params, page, reader, *params, page, page)
        with self._reading() as connection:
            rows = connection.execute(query, bound).fetchall()
        return [self._read_entry(row) for row in rows]

    def _read_entry(self, row: Sequence[Any]) -> AuditEntry:
        seq, key, _at, source, action, job_id, name, owner, data = row
        try:
            return read_entry(
                self._decoded(data),
                seq=seq,
                key=key,
                source=source,
                action=action,
                job_id=job_id,
                name=name,
                owner=owner,
            )
        except Exception as err:  # whatever the decoding raises: the entry is bad
            raise StoreCorrupt(f"audit entry {seq} cannot be read: {err!r}") from err
