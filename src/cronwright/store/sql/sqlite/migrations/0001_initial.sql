-- The first schema. Applied to a store at schema version 0; leaves it at version 1.
-- Never edit a released migration: add the next numbered file, and update schema.sql to match.

CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
    dedupe_key TEXT,
    target TEXT NOT NULL,
    wake_at INTEGER,
    flight_node TEXT,
    version INTEGER NOT NULL,
    data TEXT NOT NULL
) STRICT;

CREATE UNIQUE INDEX jobs_live_name ON jobs (name) WHERE NOT deleted;

CREATE INDEX jobs_wake ON jobs (wake_at, id) WHERE NOT deleted AND wake_at IS NOT NULL;

CREATE INDEX jobs_dedupe_key ON jobs (dedupe_key, id) WHERE dedupe_key IS NOT NULL;

CREATE INDEX jobs_state ON jobs (state, name) WHERE NOT deleted;

CREATE INDEX jobs_flight_node ON jobs (flight_node) WHERE NOT deleted AND flight_node IS NOT NULL;

CREATE TABLE runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    fire_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (job_id, fire_id, attempt)
) STRICT;

CREATE INDEX runs_job_newest ON runs (job_id, finished_at DESC, seq DESC);

CREATE INDEX runs_newest ON runs (finished_at DESC, seq DESC);

CREATE TABLE nodes (
    node TEXT PRIMARY KEY,
    beat_at INTEGER NOT NULL,
    started_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
