-- The named statements of the SQLite store, read through store/sql_files.py (`queries("sqlite")`).
-- Each starts at a `-- name: NAME` line and runs to the next one. `{...}` marks a piece the store
-- fills in (a list of placeholders, one a value, or the conditions of a filter, each bound); every value
-- is bound as a parameter (`?`). Transaction control (BEGIN, COMMIT, PRAGMA) stays in the code that owns it.

-- Jobs ----------------------------------------------------------------------------------------------

-- name: insert_job
INSERT INTO jobs (name, state, dedupe_key, target, wake_at, flight_node, version, data, created_by)
VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)

-- name: save_job
-- The compare-and-swap: the row is written only if nobody wrote it since the caller read it.
UPDATE jobs SET name = ?, state = ?, dedupe_key = ?, target = ?, wake_at = ?, flight_node = ?,
    data = ?, created_by = ?, version = version + 1
WHERE id = ? AND version = ? AND NOT deleted

-- name: save_jobs
-- save_job for many rows in one statement, as a busy node's pass writes its claims and outcomes (one
-- statement, not one per row: each costs the node a trip through the driver). {rows} is `(?, ..., ?)`
-- once per job, ten values each in save_job's order; the ids of the rows written come back.
UPDATE jobs SET name = v.column1, state = v.column2, dedupe_key = v.column3, target = v.column4,
    wake_at = v.column5, flight_node = v.column6, data = v.column7, created_by = v.column8,
    version = jobs.version + 1
FROM (VALUES {rows}) AS v
WHERE jobs.id = v.column9 AND jobs.version = v.column10 AND NOT jobs.deleted
RETURNING jobs.id

-- name: live_job_by_id
SELECT id, version, data FROM jobs WHERE id = ? AND NOT deleted

-- name: live_job_by_name
SELECT id, version, data FROM jobs WHERE name = ? AND NOT deleted

-- name: live_jobs_by_ids
SELECT id, version, data FROM jobs WHERE id IN ({ids}) AND NOT deleted

-- name: live_ids_among
SELECT id FROM jobs WHERE id IN ({ids}) AND NOT deleted

-- name: jobs_with_dedupe_key
SELECT id, version, data, deleted FROM jobs WHERE dedupe_key = ? ORDER BY id

-- name: live_jobs
-- `list`: the filters that apply follow as `AND column = ?`, then the order and a page's LIMIT.
SELECT id, version, data FROM jobs WHERE NOT deleted

-- name: count_live
-- From the counters the triggers keep (job_counts): a row per state, whatever the jobs.
SELECT coalesce(sum(n), 0) FROM job_counts WHERE created_by = ? AND state IN ({live})

-- name: due
-- `NOT deleted` and the comparison on wake_at match the partial index jobs_wake, so this walks the
-- index from its start and stops at `now` or at the LIMIT that follows.
SELECT id, version, data FROM jobs WHERE NOT deleted AND wake_at <= ? ORDER BY wake_at, id

-- name: next_wake
SELECT min(wake_at) FROM jobs WHERE NOT deleted AND wake_at IS NOT NULL

-- name: mark_deleted
UPDATE jobs SET deleted = 1 WHERE id = ? AND NOT deleted

-- name: held
-- Through the partial index jobs_flight_node: the rows one node holds, never the whole table.
SELECT id, version, data FROM jobs WHERE NOT deleted AND flight_node = ? AND state = ? ORDER BY id

-- name: counts
-- From the counters the triggers keep: a row per source and state, not one per job.
SELECT state, sum(n) FROM job_counts GROUP BY state

-- name: counts_of_source
-- A source's `status`, from the counters the triggers keep: a row per state.
SELECT state, n FROM job_counts WHERE created_by = ?

-- name: backfills_waiting
-- A source's quota: through the partial index jobs_backfilling, which holds only the rows with a queue
-- (the record has `backfill` only while its queue is not empty), so no record is decoded.
SELECT count(*) FROM jobs WHERE NOT deleted AND created_by = ? AND CASE WHEN json_valid(data) THEN json_extract(data, '$.backfill') END IS NOT NULL

-- name: jobs_by_id
-- The per-job metrics' stable set: the first rows by id (the primary key), then a LIMIT.
SELECT id, version, data FROM jobs WHERE NOT deleted ORDER BY id

-- name: job_versions_by_id
-- jobs_by_id's rows, their id and version only (no record decoded): what tells the per-job metrics
-- which jobs changed since their last scrape. Then a LIMIT.
SELECT id, version FROM jobs WHERE NOT deleted ORDER BY id

-- Runs ----------------------------------------------------------------------------------------------

-- name: insert_runs
-- Idempotent by (job_id, fire_id, attempt): a run already recorded is not recorded again, so a save
-- replayed after its outcome was unknown (semantic 29) writes nothing twice. The store then checks that
-- the row it met is this very record (recorded_run): another one is a second record of one attempt.
-- One statement for the runs of a save; {rows} is `(?, ?, ?, ?, ?)` once per run. Each run takes its
-- job's creator as its owner (a source's history reads by it); the rows go in in the order given.
-- (`WHERE true` tells the parser that ON CONFLICT is the upsert's, not a join's.)
INSERT INTO runs (job_id, fire_id, attempt, finished_at, data, owner)
SELECT v.column1, v.column2, v.column3, v.column4, v.column5,
    coalesce((SELECT created_by FROM jobs WHERE jobs.id = v.column1), '')
FROM (VALUES {rows}) AS v WHERE true
ON CONFLICT (job_id, fire_id, attempt) DO NOTHING

-- name: recorded_run
SELECT seq, data FROM runs WHERE job_id = ? AND fire_id = ? AND attempt = ?

-- name: prune_runs
-- The runs of the jobs {ids} beyond each one's newest `run_history` (the last parameter), in one
-- statement for a whole save.
DELETE FROM runs WHERE seq IN (SELECT seq FROM (SELECT seq, row_number() OVER (PARTITION BY job_id
    ORDER BY finished_at DESC, seq DESC) AS newer FROM runs WHERE job_id IN ({ids})) WHERE newer > ?)

-- name: runs
-- The history, newest first. {where} is empty, or ` WHERE ` and the conditions that apply: one
-- job's, and for a page after a run, `finished_at <= ? AND (finished_at < ? OR seq < ?)`, written so
-- that the index's range applies.
SELECT seq, data FROM runs{where} ORDER BY finished_at DESC, seq DESC LIMIT ?

-- name: runs_of_source
-- A source's history: the runs of its jobs not deleted, newest first. {after} is empty, or ` AND ` and
-- a page's condition on runs.finished_at and runs.seq, as in `runs`. It walks runs_owner_newest from
-- the newest and stops at the LIMIT (passing only the runs of the source's deleted jobs), and decodes
-- the page's rows alone.
SELECT runs.seq, runs.data FROM runs JOIN jobs ON jobs.id = runs.job_id
WHERE runs.owner = ? AND NOT jobs.deleted{after}
ORDER BY runs.finished_at DESC, runs.seq DESC LIMIT ?

-- name: run_finished_at
SELECT finished_at FROM runs WHERE seq = ?

-- Nodes and leases ----------------------------------------------------------------------------------

-- name: beat
INSERT INTO nodes (node, beat_at, started_at) VALUES (?, ?, ?)
ON CONFLICT (node) DO UPDATE SET beat_at = excluded.beat_at

-- name: forget
DELETE FROM nodes WHERE node = ?

-- name: beats
SELECT node, beat_at, started_at FROM nodes ORDER BY beat_at DESC, node

-- name: orphans
SELECT id, version, data FROM jobs
WHERE NOT deleted AND flight_node IS NOT NULL AND state = ?
    AND flight_node NOT IN (SELECT node FROM nodes WHERE beat_at > ?)
ORDER BY id

-- name: lease_left
-- The holders of runs other than one node, and the oldest last beat among them (0: one never beat).
-- The rows known to be unreadable (the last parameter, a JSON array of ids) hold no lease: nothing can
-- recover them.
SELECT count(*), min(coalesce(nodes.beat_at, 0)) FROM (SELECT DISTINCT flight_node FROM jobs
    WHERE NOT deleted AND flight_node IS NOT NULL AND flight_node != ?
        AND id NOT IN (SELECT value FROM json_each(?))) AS holders
LEFT JOIN nodes ON nodes.node = holders.flight_node

-- The outbox of notifications (semantic 38; store/sql_outbox.py) -------------------------------------

-- name: add_notification
-- Idempotent by id: a transition detected twice (by two nodes, or in a replayed save) is stored once,
-- and the row already there is left as it is.
INSERT INTO notifications (id, channel, transition, source, status, created_at, next_attempt_at, attempts,
    delivered_at, claimed_by, claimed_until, data)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)
ON CONFLICT (id) DO NOTHING

-- name: claim_notifications
-- The oldest due pending notifications that no live claim holds, now held by one node until the claim's
-- end. {lock} is empty on SQLite, whose write transaction (BEGIN IMMEDIATE) already excludes every
-- other claimer; on PostgreSQL it is FOR UPDATE SKIP LOCKED, so nodes claiming at once each take rows
-- the others do not hold, rather than waiting on each other's locks, and a row another node just
-- claimed is re-checked against its new claim before it is taken.
UPDATE notifications SET claimed_by = ?, claimed_until = ?
WHERE id IN (SELECT id FROM notifications
    WHERE status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
    ORDER BY next_attempt_at, id LIMIT ?{lock})
RETURNING id, channel, transition, status, created_at, next_attempt_at, attempts, delivered_at, data

-- name: settle_notification
-- Written back by the node that holds it, and its claim ended; a row another node has since claimed
-- (this one's claim lapsed) is left alone.
UPDATE notifications SET status = ?, attempts = ?, next_attempt_at = ?, delivered_at = ?, data = ?,
    claimed_by = NULL, claimed_until = NULL
WHERE id = ? AND claimed_by = ?

-- name: add_digest
-- A digest, held by the node that folds it for as long as that node holds the first of its members.
INSERT INTO notifications (id, channel, transition, source, status, created_at, next_attempt_at, attempts,
    delivered_at, claimed_by, claimed_until, data)
SELECT ?, ?, ?, NULL, ?, ?, ?, 0, NULL, ?, claimed_until, ? FROM notifications WHERE id = ?
ON CONFLICT (id) DO NOTHING

-- name: sent_since
SELECT channel, count(*) FROM notifications WHERE status = 'delivered' AND delivered_at >= ? GROUP BY channel

-- name: next_notification_due
-- When the earliest pending notification can next be claimed: its next attempt, or its claim's end.
SELECT min(CASE WHEN claimed_until > next_attempt_at THEN claimed_until ELSE next_attempt_at END)
FROM notifications WHERE status = 'pending'

-- name: prune_notifications
-- Settled notifications (delivered, digested, abandoned) older than the retention go; pending ones stay.
DELETE FROM notifications WHERE status != 'pending' AND created_at < ?

-- name: notification_created_at
SELECT created_at FROM notifications WHERE id = ?

-- name: notifications_page
-- Newest first. {where} is empty, or ` WHERE ` and the conditions that apply: a source's own, and for a
-- page after a notification, `(created_at, id) < (?, ?)`.
SELECT id, channel, transition, status, created_at, next_attempt_at, attempts, delivered_at, data
FROM notifications{where} ORDER BY created_at DESC, id DESC LIMIT ?

-- The catalog -----------------------------------------------------------------------------------------

-- name: tables
SELECT name FROM sqlite_master WHERE type = 'table'

-- The audit log ------------------------------------------------------------------------------------

-- name: insert_audit
-- In the transaction of the mutation it records. Idempotent by key: a replayed write records it once.
INSERT INTO audit (key, at, source, action, job_id, name, owner, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING

-- name: audit
-- Newest first. {where} is empty, or ` WHERE ` and the conditions that apply: a source's, a job's, a
-- name's, and for a page `seq < ?`.
SELECT seq, key, at, source, action, job_id, name, owner, data FROM audit{where} ORDER BY seq DESC LIMIT ?

-- name: audit_of_reader
-- What a source may read: the entries it wrote or about its own jobs, newest first. Each side walks its
-- own index (audit_source, audit_owner) backwards for a page at most, so the cost is a page, not the
-- source's whole log (an OR of the two columns would read and sort every entry of the source). {rest} is
-- empty or ` AND ` and the other conditions, given once for each side.
SELECT seq, key, at, source, action, job_id, name, owner, data FROM audit WHERE seq IN (
    SELECT seq FROM (SELECT seq FROM audit WHERE source = ?{rest} ORDER BY seq DESC LIMIT ?) AS by_source
    UNION
    SELECT seq FROM (SELECT seq FROM audit WHERE owner = ?{rest} ORDER BY seq DESC LIMIT ?) AS by_owner
) ORDER BY seq DESC LIMIT ?

-- name: prune_audit
-- Retention (node.audit_retention), through the index audit_at.
DELETE FROM audit WHERE at < ?
