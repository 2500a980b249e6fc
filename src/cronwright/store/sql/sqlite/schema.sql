-- The fresh cronwright schema for SQLite. A new store is created from this file; an older store is
-- brought here by the numbered files in migrations/. A test proves that both roads end in the same
-- schema, so a change goes into both: a new migration, and this file.
--
-- Jobs keep their full record as codec JSON in `data`; the other columns are copies that the store
-- filters, orders and indexes on. `id` and `version` live in columns only, so the JSON never
-- disagrees with them.

CREATE TABLE jobs (
    -- AUTOINCREMENT so that the id of a deleted job is never handed out again: a late run or a stale
    -- reply naming that id must never reach a newer job.
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    -- Deleted rows stay, for `once` dedupe and for the history; they are never read as jobs again.
    deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
    dedupe_key TEXT,
    target TEXT NOT NULL,
    -- Job.wake_at() as integer microseconds since the epoch (UTC), so it sorts and compares as a number.
    wake_at INTEGER,
    -- The node that runs the job's current attempt, if any: what a lease covers.
    flight_node TEXT,
    version INTEGER NOT NULL,
    data TEXT NOT NULL
    -- The source that created the job (Job.created_by): a source's `list` and quota read it. It is
    -- last, and written in the form that migration 0002's ALTER TABLE leaves, so both roads match.
    , created_by TEXT NOT NULL DEFAULT '') STRICT;

-- The name is unique among live rows only, so a name is free again once its job is deleted, and a
-- concurrent insert of the same name fails inside the database, atomically.
CREATE UNIQUE INDEX jobs_live_name ON jobs (name) WHERE NOT deleted;

-- A scheduling pass reads only the jobs that are due: O(log n + due), whatever the number not due.
CREATE INDEX jobs_wake ON jobs (wake_at, id) WHERE NOT deleted AND wake_at IS NOT NULL;

CREATE INDEX jobs_dedupe_key ON jobs (dedupe_key, id) WHERE dedupe_key IS NOT NULL;

CREATE INDEX jobs_state ON jobs (state, name) WHERE NOT deleted;

-- A source's own jobs: its `list` (by state, ordered by name).
CREATE INDEX jobs_created_by ON jobs (created_by, state, name) WHERE NOT deleted;

-- A source's `list` without a state: a page in the order of names, read from the index.
CREATE INDEX jobs_created_by_name ON jobs (created_by, name) WHERE NOT deleted;

-- A source's backfills waiting (its quota counts them): only the rows whose record has a queue.
CREATE INDEX jobs_backfilling ON jobs (created_by) WHERE NOT deleted AND CASE WHEN json_valid(data) THEN json_extract(data, '$.backfill') END IS NOT NULL;

-- Orphan detection looks at jobs held by a node, never at the whole table.
CREATE INDEX jobs_flight_node ON jobs (flight_node) WHERE NOT deleted AND flight_node IS NOT NULL;

-- The first live jobs by id with their versions (first_versions_by_id), read from this index alone.
-- `deleted` too, though every row has it false: SQLite's planner counts a partial index as covering only
-- if it holds each column the query names, its own WHERE's included (3.40: "USING COVERING INDEX").
CREATE INDEX jobs_live_id_version ON jobs (id, version, deleted) WHERE NOT deleted;

-- How many jobs not deleted each source has in each state (`status`, and the live schedules a quota
-- checks), kept by the triggers below in the transaction of every change of a job's row.
CREATE TABLE job_counts (
    created_by TEXT NOT NULL,
    state TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (created_by, state)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER jobs_counted_insert AFTER INSERT ON jobs WHEN NOT NEW.deleted
BEGIN
    INSERT INTO job_counts (created_by, state, n) VALUES (NEW.created_by, NEW.state, 1)
    ON CONFLICT (created_by, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_counted_update AFTER UPDATE OF state, deleted, created_by ON jobs
WHEN OLD.state IS NOT NEW.state OR OLD.deleted IS NOT NEW.deleted OR OLD.created_by IS NOT NEW.created_by
BEGIN
    UPDATE job_counts SET n = n - 1 WHERE NOT OLD.deleted AND created_by = OLD.created_by AND state = OLD.state;
    INSERT INTO job_counts (created_by, state, n) SELECT NEW.created_by, NEW.state, 1 WHERE NOT NEW.deleted
    ON CONFLICT (created_by, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_counted_delete AFTER DELETE ON jobs WHEN NOT OLD.deleted
BEGIN
    UPDATE job_counts SET n = n - 1 WHERE created_by = OLD.created_by AND state = OLD.state;
END;

-- Runs: `owner` is the creator of the run's job (a source's history reads its own runs through
-- runs_owner_newest); it sits where migration 0005's ALTER TABLE leaves it, so both roads match.
CREATE TABLE runs (
    -- Insertion order, the tie-break for runs that finished at the same instant.
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    -- No foreign key: a run outlives its job's deletion, and its job row is never removed anyway.
    job_id INTEGER NOT NULL,
    fire_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    data TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',
    -- Two rows with one key would be one attempt run twice: the database refuses the second.
    UNIQUE (job_id, fire_id, attempt)
) STRICT;

CREATE INDEX runs_job_newest ON runs (job_id, finished_at DESC, seq DESC);

CREATE INDEX runs_newest ON runs (finished_at DESC, seq DESC);

-- A source's history: its newest runs, a page at a time.
CREATE INDEX runs_owner_newest ON runs (owner, finished_at DESC, seq DESC);

CREATE TABLE nodes (
    node TEXT PRIMARY KEY,
    beat_at INTEGER NOT NULL,
    started_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The audit log (semantic 36): one entry per mutation, written in the mutation's transaction.
CREATE TABLE audit (
    -- The order entries were written in: newest first is `seq DESC`, and `before` pages on it.
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Unique per entry, so a write replayed after its outcome was unknown records it once.
    key TEXT NOT NULL UNIQUE,
    -- Integer microseconds since the epoch (UTC): what retention compares.
    at INTEGER NOT NULL,
    source TEXT NOT NULL,
    action TEXT NOT NULL,
    job_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    -- The job's created_by: a source reads the entries it made and those about its own schedules.
    owner TEXT NOT NULL,
    data TEXT NOT NULL
) STRICT;

CREATE INDEX audit_source ON audit (source, seq);

CREATE INDEX audit_owner ON audit (owner, seq);

CREATE INDEX audit_job ON audit (job_id, seq);

CREATE INDEX audit_at ON audit (at);

-- The outbox of alert notifications (semantic 38), written in the transaction of each transition.
CREATE TABLE notifications (
    -- The idempotency key, sent with every attempt: the same transition detected twice is stored once.
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    transition TEXT NOT NULL,
    -- The source of the job it is about (NULL for a node's or the store's), for a source's own list.
    source TEXT,
    status TEXT NOT NULL,
    -- Instants as integer microseconds since the epoch (UTC), as jobs.wake_at.
    created_at INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    delivered_at INTEGER,
    -- A claim: the node that holds it for sending, until when. Another node takes it once it lapses.
    claimed_by TEXT,
    claimed_until INTEGER,
    -- The body, the last error and the digest that carries it, as JSON.
    data TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- A delivery pass reads only what is pending and due.
CREATE INDEX notifications_due ON notifications (next_attempt_at, id) WHERE status = 'pending';

-- `notifications`, newest first, a page at a time.
CREATE INDEX notifications_newest ON notifications (created_at, id);

-- The sends of the last minute per channel, for the digest rule.
CREATE INDEX notifications_delivered ON notifications (delivered_at) WHERE status = 'delivered';
