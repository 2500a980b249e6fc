-- Version 2 to 3: the audit log (semantic 36), one entry per mutation of a schedule, written in the
-- transaction of the mutation. Never edit a released migration: add the next numbered file, and update
-- schema.sql to match.

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
