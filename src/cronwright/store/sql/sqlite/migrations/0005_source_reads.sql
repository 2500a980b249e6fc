-- Version 4 to 5: what a source reads costs what it returns (semantic 42), answered from indexes rather
-- than by decoding every job of the source. Never edit a released migration: add the next numbered file,
-- and update schema.sql to match.

-- Its `list`, a page at a time in the order of names, without sorting every job it has first.
CREATE INDEX jobs_created_by_name ON jobs (created_by, name) WHERE NOT deleted;

-- Its backfills waiting, which count against its max_schedules: an index that holds only the rows with
-- a queue (a record has `backfill` only while its queue is not empty). A row whose JSON a hand edit broke
-- is in no queue: json_extract would refuse it, and with it every write of that row (semantic 11).
CREATE INDEX jobs_backfilling ON jobs (created_by) WHERE NOT deleted AND CASE WHEN json_valid(data) THEN json_extract(data, '$.backfill') END IS NOT NULL;

-- Its history: each run carries its job's creator, so the source's newest runs are read from an index,
-- newest first, up to a page. Existing runs take their job's.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';

UPDATE runs SET owner = coalesce((SELECT created_by FROM jobs WHERE jobs.id = runs.job_id), '');

CREATE INDEX runs_owner_newest ON runs (owner, finished_at DESC, seq DESC);

-- Its counts (`status`, and the live schedules its quota checks): kept by triggers in the transaction of
-- every change of a job's row, so a count reads a few rows, not one per job. SQLite has one writer at a
-- time, so the counters add no contention; PostgreSQL counts from its index instead.
CREATE TABLE job_counts (
    created_by TEXT NOT NULL,
    state TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (created_by, state)
) STRICT, WITHOUT ROWID;

INSERT INTO job_counts (created_by, state, n)
SELECT created_by, state, count(*) FROM jobs WHERE NOT deleted GROUP BY created_by, state;

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
