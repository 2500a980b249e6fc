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
