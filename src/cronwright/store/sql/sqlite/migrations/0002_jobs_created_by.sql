-- Version 1 to 2: the source that created each job gets a column, so that a source's `list` and its
-- max_schedules count are answered by the database from an index, without decoding every job.
-- Never edit a released migration: add the next numbered file, and update schema.sql to match.

ALTER TABLE jobs ADD COLUMN created_by TEXT NOT NULL DEFAULT '';

-- Existing rows, deleted ones included, take the value their record already holds.
UPDATE jobs SET created_by = coalesce(json_extract(data, '$.created_by'), '');

CREATE INDEX jobs_created_by ON jobs (created_by, state, name) WHERE NOT deleted;
