-- Version 4 to 5: a source's backfills waiting, which count against its max_schedules, are counted by
-- the database from an index that holds only the rows with a queue, without decoding any job (a create
-- used to decode every job of its source). A record has `backfill` only while its queue is not empty.
-- Additive: an index only. Never edit a released migration: add the next numbered file, and update
-- schema.sql to match.

CREATE INDEX jobs_backfilling ON jobs (created_by) WHERE NOT deleted AND (data ->> 'backfill') IS NOT NULL;
