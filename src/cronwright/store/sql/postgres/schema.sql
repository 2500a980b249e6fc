-- The fresh cronwright schema for PostgreSQL. A new store is created from this file, inside the schema
-- the store was given (search_path points there, so no name here is schema-qualified); an older store
-- is brought here by the numbered files in migrations/. A test proves that both roads end in the same
-- catalog, so a change goes into both: a new migration, and this file.
--
-- Jobs keep their full record as codec JSON in `data`; the other columns are copies that the store
-- filters, orders and indexes on. `id` and `version` live in columns only, so the JSON never
-- disagrees with them.

-- Which migrations this schema has had. A store newer than the code is refused, never downgraded.
CREATE TABLE schema_migrations (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    -- An identity never hands a number out twice, so a late run or a stale reply naming the id of a
    -- deleted job never reaches a newer one.
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- "C": names order by code point, as on SQLite, whatever the database's locale.
    name text COLLATE "C" NOT NULL,
    state text NOT NULL,
    -- Deleted rows stay, for `once` dedupe and for the history; they are never read as jobs again.
    deleted boolean NOT NULL DEFAULT false,
    dedupe_key text,
    target text NOT NULL,
    -- Job.wake_at(): when a scheduling pass next has something to do with the job.
    wake_at timestamptz,
    -- The node that runs the job's current attempt, if any: what a lease covers.
    flight_node text,
    -- The compare-and-swap counter: every write is conditional on it and bumps it.
    version bigint NOT NULL,
    data json NOT NULL,
    -- The source that created the job (Job.created_by): a source's `list` and quota read it. Last, as
    -- migration 0002 adds it.
    created_by text NOT NULL DEFAULT ''
);

-- The name is unique among live rows only, so a name is free again once its job is deleted, and a
-- concurrent insert of the same name fails inside the database, atomically.
CREATE UNIQUE INDEX jobs_live_name ON jobs (name) WHERE NOT deleted;

-- A scheduling pass reads only the jobs that are due: O(log n + due), whatever the number not due.
CREATE INDEX jobs_wake ON jobs (wake_at, id) WHERE NOT deleted AND wake_at IS NOT NULL;

CREATE INDEX jobs_dedupe_key ON jobs (dedupe_key, id) WHERE dedupe_key IS NOT NULL;

CREATE INDEX jobs_state ON jobs (state, name) WHERE NOT deleted;

-- A source's own jobs: its `list` (by state, ordered by name) and its count of live jobs.
CREATE INDEX jobs_created_by ON jobs (created_by, state, name) WHERE NOT deleted;

-- A source's `list` without a state: a page in the order of names, read from the index.
CREATE INDEX jobs_created_by_name ON jobs (created_by, name) WHERE NOT deleted;

-- A source's backfills waiting (its quota counts them): only the rows whose record has a queue.
CREATE INDEX jobs_backfilling ON jobs (created_by) WHERE NOT deleted AND (data ->> 'backfill') IS NOT NULL;

-- Orphan detection looks at jobs held by a node, never at the whole table.
CREATE INDEX jobs_flight_node ON jobs (flight_node) WHERE NOT deleted AND flight_node IS NOT NULL;

-- The first live jobs by id with their versions (first_versions_by_id), read from this index alone.
CREATE INDEX jobs_live_id_version ON jobs (id, version) WHERE NOT deleted;

-- How many jobs not deleted each source has in each state (`status`, and the live schedules a quota
-- checks): every change of a job's row appends +1 for the (source, state) it enters and -1 for the one it
-- leaves, in the transaction of the change, so a count is the sum of its source's rows. Appended rather
-- than updated in place: one counter row per (source, state) would make every node's claims and outcomes
-- (each changes a job's state) wait on the same row. The store folds a source's rows into one per state
-- now and then (fold_counts in queries.sql).
CREATE TABLE job_count_deltas (
    created_by text NOT NULL,
    state text NOT NULL,
    n bigint NOT NULL
);

CREATE INDEX job_count_deltas_source ON job_count_deltas (created_by, state) INCLUDE (n);

-- A trigger, not the store's code: the writes of a node of an older release (during a rolling upgrade)
-- and hand edits are counted too. Its search_path is the store's schema (as it was when the function was
-- made), so a write through a schema-qualified name from any session counts.
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

CREATE TABLE runs (
    -- Insertion order, the tie-break for runs that finished at the same instant.
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- No foreign key: a run outlives its job's deletion, and its job row is never removed anyway.
    job_id bigint NOT NULL,
    fire_id text NOT NULL,
    attempt integer NOT NULL,
    finished_at timestamptz NOT NULL,
    data json NOT NULL,
    -- The creator of the run's job (jobs.created_by): a source's history reads its own runs by it.
    owner text NOT NULL DEFAULT '',
    -- Two rows with one key would be one attempt run twice: the database refuses the second, even if
    -- a lease was mis-handled and two nodes both believed they held the attempt.
    CONSTRAINT runs_once UNIQUE (job_id, fire_id, attempt)
);

CREATE INDEX runs_job_newest ON runs (job_id, finished_at DESC, seq DESC);

CREATE INDEX runs_newest ON runs (finished_at DESC, seq DESC);

-- A source's history: its newest runs, a page at a time.
CREATE INDEX runs_owner_newest ON runs (owner, finished_at DESC, seq DESC);

-- A run inserted without an owner (by a node of the previous release, during a rolling upgrade) takes
-- its job's creator, so that it is in its source's history.
CREATE FUNCTION cronwright_run_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT created_by INTO NEW.owner FROM jobs WHERE id = NEW.job_id;
    NEW.owner := coalesce(NEW.owner, '');
    RETURN NEW;
END
$$;

CREATE TRIGGER runs_owner_from_job BEFORE INSERT ON runs
    FOR EACH ROW WHEN (NEW.owner = '') EXECUTE FUNCTION cronwright_run_owner();

-- One row per live node: its lease over all of its runs in flight.
CREATE TABLE nodes (
    node text PRIMARY KEY,
    -- As the node's own clock read them (what it passed to `beat`).
    beat_at timestamptz NOT NULL,
    started_at timestamptz NOT NULL,
    -- As the database's clock read them: leases are judged on this clock, the one all nodes share.
    db_beat_at timestamptz NOT NULL,
    db_started_at timestamptz NOT NULL
);

-- The audit log (semantic 36): one entry per mutation, written in the mutation's transaction.
CREATE TABLE audit (
    -- The order entries were written in: newest first is `seq DESC`, and `before` pages on it.
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Unique per entry, so a write replayed after its outcome was unknown records it once.
    key text NOT NULL UNIQUE,
    at timestamptz NOT NULL,
    source text NOT NULL,
    action text NOT NULL,
    job_id bigint NOT NULL,
    name text NOT NULL,
    -- The job's created_by: a source reads the entries it made and those about its own schedules.
    owner text NOT NULL,
    data json NOT NULL
);

CREATE INDEX audit_source ON audit (source, seq);

CREATE INDEX audit_owner ON audit (owner, seq);

CREATE INDEX audit_job ON audit (job_id, seq);

CREATE INDEX audit_at ON audit (at);

-- The outbox of alert notifications (semantic 38), written in the transaction of each transition.
CREATE TABLE notifications (
    -- The idempotency key, sent with every attempt: the same transition detected twice is stored once.
    id text COLLATE "C" PRIMARY KEY,
    channel text NOT NULL,
    transition text NOT NULL,
    -- The source of the job it is about (NULL for a node's or the store's), for a source's own list.
    source text,
    status text NOT NULL,
    -- Instants as timestamps with their zone.
    created_at timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    delivered_at timestamptz,
    -- A claim: the node that holds it for sending, until when. Another node takes it once it lapses.
    claimed_by text,
    claimed_until timestamptz,
    -- The body, the last error and the digest that carries it, as JSON.
    data text NOT NULL
);

-- A delivery pass reads only what is pending and due.
CREATE INDEX notifications_due ON notifications (next_attempt_at, id) WHERE status = 'pending';

-- `notifications`, newest first, a page at a time.
CREATE INDEX notifications_newest ON notifications (created_at, id);

-- The sends of the last minute per channel, for the digest rule.
CREATE INDEX notifications_delivered ON notifications (delivered_at) WHERE status = 'delivered';
