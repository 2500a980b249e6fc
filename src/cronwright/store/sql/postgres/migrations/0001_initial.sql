-- The first schema. Applied to an empty schema (version 0); leaves it at version 1.
-- Never edit a released migration: add the next numbered file, and update schema.sql to match.

CREATE TABLE schema_migrations (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text COLLATE "C" NOT NULL,
    state text NOT NULL,
    deleted boolean NOT NULL DEFAULT false,
    dedupe_key text,
    target text NOT NULL,
    wake_at timestamptz,
    flight_node text,
    version bigint NOT NULL,
    data json NOT NULL
);

CREATE UNIQUE INDEX jobs_live_name ON jobs (name) WHERE NOT deleted;

CREATE INDEX jobs_wake ON jobs (wake_at, id) WHERE NOT deleted AND wake_at IS NOT NULL;

CREATE INDEX jobs_dedupe_key ON jobs (dedupe_key, id) WHERE dedupe_key IS NOT NULL;

CREATE INDEX jobs_state ON jobs (state, name) WHERE NOT deleted;

CREATE INDEX jobs_flight_node ON jobs (flight_node) WHERE NOT deleted AND flight_node IS NOT NULL;

CREATE TABLE runs (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id bigint NOT NULL,
    fire_id text NOT NULL,
    attempt integer NOT NULL,
    finished_at timestamptz NOT NULL,
    data json NOT NULL,
    CONSTRAINT runs_once UNIQUE (job_id, fire_id, attempt)
);

CREATE INDEX runs_job_newest ON runs (job_id, finished_at DESC, seq DESC);

CREATE INDEX runs_newest ON runs (finished_at DESC, seq DESC);

CREATE TABLE nodes (
    node text PRIMARY KEY,
    beat_at timestamptz NOT NULL,
    started_at timestamptz NOT NULL,
    db_beat_at timestamptz NOT NULL,
    db_started_at timestamptz NOT NULL
);
