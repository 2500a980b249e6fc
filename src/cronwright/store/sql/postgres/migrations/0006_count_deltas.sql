-- Version 5 to 6: a source's counts read a few rows, not one per job, and a live job's id and version are
-- read from an index alone. Additive: a table, a trigger that fills it, and an index. Never edit a released
-- migration: add the next numbered file, and update schema.sql to match.

-- Its counts (`status`, and the live schedules its quota checks): every change of a job's row appends
-- +1 for the (source, state) it enters and -1 for the one it leaves, in the transaction of the change, so
-- a count is the sum of its source's rows. Appended rather than updated in place: one counter row per
-- (source, state) would make every node's claims and outcomes (each changes a job's state) wait on the
-- same row. The store folds a source's rows into one per state now and then (fold_counts in queries.sql).
CREATE TABLE job_count_deltas (
    created_by text NOT NULL,
    state text NOT NULL,
    n bigint NOT NULL
);

CREATE INDEX job_count_deltas_source ON job_count_deltas (created_by, state) INCLUDE (n);

-- A trigger, not the store's code: the writes of a node of the previous release, running beside this one
-- during a rolling upgrade, and hand edits are counted too. Its search_path is the store's schema (as it
-- was when the function was made), so a write through a schema-qualified name from any session counts.
CREATE FUNCTION cronwright_count_job() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        IF NOT OLD.deleted THEN
            INSERT INTO job_count_deltas (created_by, state, n) VALUES (OLD.created_by, OLD.state, -1);
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        IF NOT NEW.deleted THEN
            INSERT INTO job_count_deltas (created_by, state, n) VALUES (NEW.created_by, NEW.state, 1);
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_counted AFTER INSERT OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION cronwright_count_job();

CREATE TRIGGER jobs_counted_change AFTER UPDATE OF state, deleted, created_by ON jobs
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.deleted IS DISTINCT FROM NEW.deleted
        OR OLD.created_by IS DISTINCT FROM NEW.created_by)
    EXECUTE FUNCTION cronwright_count_job();

-- An emptied jobs table (by hand) leaves no count behind.
CREATE FUNCTION cronwright_count_no_jobs() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    TRUNCATE job_count_deltas;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_counted_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION cronwright_count_no_jobs();

-- The seed: the rows there are. After the triggers, on purpose: creating them locked the table against
-- writes until this transaction commits, so no write falls between the seed's snapshot and the triggers.
INSERT INTO job_count_deltas (created_by, state, n)
SELECT created_by, state, count(*) FROM jobs WHERE NOT deleted GROUP BY created_by, state;

-- The first live jobs by id with their versions (first_versions_by_id), read from this index alone.
CREATE INDEX jobs_live_id_version ON jobs (id, version) WHERE NOT deleted;
