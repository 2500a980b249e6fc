-- Version 4 to 5: what a source reads costs what it returns (semantic 42), answered from indexes rather
-- than by decoding every job of the source. Additive: an index, and a column with a default. Never edit
-- a released migration: add the next numbered file, and update schema.sql to match.

-- Its `list`, a page at a time in the order of names, without sorting every job it has first.
CREATE INDEX jobs_created_by_name ON jobs (created_by, name) WHERE NOT deleted;

-- Its backfills waiting, which count against its max_schedules: an index that holds only the rows with
-- a queue (a record has `backfill` only while its queue is not empty).
CREATE INDEX jobs_backfilling ON jobs (created_by) WHERE NOT deleted AND (data ->> 'backfill') IS NOT NULL;

-- Its history: each run carries its job's creator, so the source's newest runs are read from an index,
-- newest first, up to a page. Existing runs take their job's.
ALTER TABLE runs ADD COLUMN owner text NOT NULL DEFAULT '';

UPDATE runs SET owner = jobs.created_by FROM jobs WHERE jobs.id = runs.job_id;

CREATE INDEX runs_owner_newest ON runs (owner, finished_at DESC, seq DESC);

-- A node of the previous release, upgraded one at a time beside this one, inserts runs without an owner:
-- the database fills it in from the job, so no run of a rolling upgrade is missing from its source's
-- history. This release always names the owner, so the trigger's condition is false for its inserts.
CREATE FUNCTION cronwright_run_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT created_by INTO NEW.owner FROM jobs WHERE id = NEW.job_id;
    NEW.owner := coalesce(NEW.owner, '');
    RETURN NEW;
END
$$;

CREATE TRIGGER runs_owner_from_job BEFORE INSERT ON runs
    FOR EACH ROW WHEN (NEW.owner = '') EXECUTE FUNCTION cronwright_run_owner();
