-- Version 5 to 6: a live job's id and version are read from an index alone. (PostgreSQL's migration 6 also
-- adds its counters; SQLite has kept its own since version 5.) Never edit a released migration: add the
-- next numbered file, and update schema.sql to match.

-- The first live jobs by id with their versions (first_versions_by_id), read from this index alone.
-- `deleted` too, though every row has it false: SQLite's planner counts a partial index as covering only
-- if it holds each column the query names, its own WHERE's included (3.40: "USING COVERING INDEX").
CREATE INDEX jobs_live_id_version ON jobs (id, version, deleted) WHERE NOT deleted;
