-- Version 2 to 3: the audit log (semantic 36), one entry per mutation of a schedule, written in the
-- transaction of the mutation. Never edit a released migration: add the next numbered file, and update
-- schema.sql to match.

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
