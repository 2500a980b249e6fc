-- The named statements of the PostgreSQL store, read through store/sql_files.py (`queries("postgres")`).
-- Each starts at a `-- name: NAME` line and runs to the next one. `{...}` marks a piece the store
-- fills in (a list of placeholders, one a value, or the conditions of a filter, each bound); every value
-- is bound as a parameter (`%s`). Where the clock that judges a lease picks the columns, each clock has
-- its own statement (`..._by_database_clock` reads the `db_` columns, stamped with the server's now()),
-- or the statement reads both and the store takes its clock's. Unqualified names reach the store's
-- own schema through the connection's search_path.

-- Jobs ----------------------------------------------------------------------------------------------

-- name: insert_job
INSERT INTO jobs (name, state, dedupe_key, target, wake_at, flight_node, version, data, created_by)
VALUES (%s, %s, %s, %s, %s, %s, 1, %s, %s) RETURNING id

-- name: save_job
-- The claim, and every other job write, is this conditional update, and not a `SELECT ... FOR UPDATE
-- SKIP LOCKED` followed by an update. A pass has already read its due jobs (a snapshot, with their
-- versions), so the write only has to prove that nobody wrote the row since. Under READ COMMITTED a
-- second writer of the same row waits for the first one's commit, then re-checks this WHERE against
-- the row the first one committed: the version moved, so it updates nothing and reports the claim
-- lost. Exactly one writer of a version wins, without a lock held across the read, the decision and
-- the write. SKIP LOCKED would instead answer "lost" while the first writer might still roll back,
-- which would leave an occurrence unclaimed until the next pass; and it buys nothing here, because
-- nodes do not hand out work from a queue: each one decides from its own read. Rows are updated in id
-- order, so two nodes claiming overlapping batches wait for each other but never deadlock.
UPDATE jobs SET name = %s, state = %s, dedupe_key = %s, target = %s, wake_at = %s,
    flight_node = %s, data = %s, created_by = %s, version = version + 1
WHERE id = %s AND version = %s AND NOT deleted RETURNING id

-- name: live_job_by_id
SELECT id, version, data FROM jobs WHERE id = %s AND NOT deleted

-- name: live_job_by_name
SELECT id, version, data FROM jobs WHERE name = %s AND NOT deleted

-- name: live_jobs_by_ids
SELECT id, version, data FROM jobs WHERE id IN ({ids}) AND NOT deleted

-- name: live_ids_among
SELECT id FROM jobs WHERE id IN ({ids}) AND NOT deleted

-- name: jobs_with_dedupe_key
SELECT id, version, data, deleted FROM jobs WHERE dedupe_key = %s ORDER BY id

-- name: live_jobs
-- `list`: the filters that apply follow as `AND column = %s`, then the order and a page's LIMIT.
SELECT id, version, data FROM jobs WHERE NOT deleted

-- name: count_live
-- The sum of the source's count rows (job_count_deltas) of the live states, and how many rows it summed
-- (the store folds them when they are many): read from the index job_count_deltas_source.
SELECT coalesce(sum(n), 0), count(*) FROM job_count_deltas WHERE created_by = %s AND state IN ({live})

-- name: due
-- `NOT deleted` and the comparison on wake_at match the partial index jobs_wake, so this walks the
-- index from its start and stops at `now` or at the LIMIT that follows.
SELECT id, version, data FROM jobs WHERE NOT deleted AND wake_at <= %s ORDER BY wake_at, id

-- name: due_shared
-- `due` while other nodes are live: of the earliest due rows, as many as the live nodes could take
-- between them (the first `%s`), this node's share first, by the rank the beats give it (`mod(id, nodes)
-- = rank`, as `lease_left` last found them), then the rest, earliest first. Nodes that read at once then claim different rows, instead of
-- all racing for the same first ones (the losers waiting on the winner's row locks, then losing); a
-- share left untaken (its node is busy, or gone) is still read by the others, after their own, and
-- never waits more than a window's worth of rows. Only the order of reads changes: the claim is still
-- the compare-and-swap below.
SELECT id, version, data FROM (
    SELECT id, version, data, wake_at FROM jobs WHERE NOT deleted AND wake_at <= %s
    ORDER BY wake_at, id LIMIT %s) AS head
ORDER BY mod(id, %s) <> %s, wake_at, id

-- name: next_wake
SELECT min(wake_at) FROM jobs WHERE NOT deleted AND wake_at IS NOT NULL

-- name: mark_deleted
-- Without reading the row: the operator's way to remove one that cannot be read.
UPDATE jobs SET deleted = true WHERE id = %s AND NOT deleted

-- name: delete_job
UPDATE jobs SET deleted = true WHERE id = %s AND NOT deleted RETURNING id, version, data

-- name: held
-- Through the partial index jobs_flight_node: the rows one node holds, never the whole table.
SELECT id, version, data FROM jobs WHERE NOT deleted AND flight_node = %s AND state = %s ORDER BY id

-- name: counts
-- From the count rows the triggers append: a few per source and state, not one per job. Then how many of
-- the rows summed were not folded yet: all but one per source.
SELECT state, sum(n), count(*) - count(DISTINCT created_by) FROM job_count_deltas GROUP BY state

-- name: counts_of_source
-- A source's `status`: the sum of its count rows per state, and how many rows each summed (one when
-- folded).
SELECT state, sum(n), count(*) FROM job_count_deltas WHERE created_by = %s GROUP BY state

-- name: fold_lock
-- Only one fold at a time (a second one skips, rather than wait): taken for the fold's transaction.
SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))

-- name: fold_counts
-- The count rows of one source (`{where}`: `AND created_by = %s`) or of all, folded into one row per
-- (source, state) where there are several (a folded row is left alone), in one statement: a reader sees
-- the rows before or the rows after, never a mix, and a row a write appends meanwhile is not in the
-- statement's snapshot, so it stays, and every sum stays exact. A sum of zero leaves no row.
WITH several AS (
    SELECT created_by, state FROM job_count_deltas WHERE true {where}
    GROUP BY created_by, state HAVING count(*) > 1),
folded AS (
    DELETE FROM job_count_deltas AS d USING several
    WHERE d.created_by = several.created_by AND d.state = several.state
    RETURNING d.created_by, d.state, d.n)
INSERT INTO job_count_deltas (created_by, state, n)
SELECT created_by, state, sum(n) FROM folded GROUP BY created_by, state HAVING sum(n) <> 0

-- name: backfills_waiting
-- A source's quota: through the partial index jobs_backfilling, which holds only the rows with a queue
-- (the record has `backfill` only while its queue is not empty), so no record is decoded.
SELECT count(*) FROM jobs WHERE NOT deleted AND created_by = %s AND (data ->> 'backfill') IS NOT NULL

-- name: jobs_by_id
-- The per-job metrics' stable set: the first rows by id (the primary key), then a LIMIT.
SELECT id, version, data FROM jobs WHERE NOT deleted ORDER BY id

-- name: job_versions_by_id
-- jobs_by_id's rows, their id and version only (no record decoded): what tells the per-job metrics
-- which jobs changed since their last scrape. Then a LIMIT.
SELECT id, version FROM jobs WHERE NOT deleted ORDER BY id

-- name: notify
-- Delivered when the transaction commits, and never if it rolls back.
SELECT pg_notify(%s, %s)

-- Runs ----------------------------------------------------------------------------------------------

-- name: insert_run
-- Idempotent by (job_id, fire_id, attempt), as on SQLite: a save replayed after its outcome was
-- unknown (semantic 29) writes no run twice, and the store checks that a row it met is this very
-- record (recorded_run). The run takes its job's creator as its owner (the last parameter is the job's
-- id again): a source's history reads by it.
INSERT INTO runs (job_id, fire_id, attempt, finished_at, data, owner)
VALUES (%s, %s, %s, %s, %s, coalesce((SELECT created_by FROM jobs WHERE id = %s), ''))
ON CONFLICT (job_id, fire_id, attempt) DO NOTHING RETURNING seq

-- name: recorded_run
SELECT seq, data FROM runs WHERE job_id = %s AND fire_id = %s AND attempt = %s

-- name: prune_runs
DELETE FROM runs WHERE seq IN (SELECT seq FROM (
    SELECT seq, row_number() OVER (PARTITION BY job_id ORDER BY finished_at DESC, seq DESC) AS newest
    FROM runs WHERE job_id = ANY(%s)) AS ranked WHERE newest > %s)

-- name: runs
-- The history, newest first. {where} is empty, or ` WHERE ` and the conditions that apply: one
-- job's, and for a page after a run, `finished_at <= %s AND (finished_at < %s OR seq < %s)`, written so
-- that the index's range applies.
SELECT seq, data FROM runs{where} ORDER BY finished_at DESC, seq DESC LIMIT %s

-- name: runs_of_source
-- A source's history: the runs of its jobs not deleted, newest first. {after} is empty, or ` AND ` and
-- a page's condition on runs.finished_at and runs.seq, as in `runs`. It walks runs_owner_newest from
-- the newest and stops at the LIMIT (passing only the runs of the source's deleted jobs), and decodes
-- the page's rows alone.
SELECT runs.seq, runs.data FROM runs JOIN jobs ON jobs.id = runs.job_id
WHERE runs.owner = %s AND NOT jobs.deleted{after}
ORDER BY runs.finished_at DESC, runs.seq DESC LIMIT %s

-- name: run_finished_at
SELECT finished_at FROM runs WHERE seq = %s

-- Nodes and leases ----------------------------------------------------------------------------------

-- name: beat
-- Stamped on both clocks: the node's (as passed) and the database's, which judges leases by default.
INSERT INTO nodes (node, beat_at, started_at, db_beat_at, db_started_at)
VALUES (%s, %s, %s, now(), now())
ON CONFLICT (node) DO UPDATE SET beat_at = excluded.beat_at, db_beat_at = excluded.db_beat_at
RETURNING now()

-- name: forget
DELETE FROM nodes WHERE node = %s

-- name: beats
-- On the node's clock: the beats as each node stamped them.
SELECT node, beat_at, started_at FROM nodes ORDER BY beat_at DESC, node

-- name: beats_by_database_clock
SELECT node, db_beat_at, db_started_at FROM nodes ORDER BY db_beat_at DESC, node

-- name: orphans
-- On the node's clock: a beat must be after the instant given.
SELECT id, version, data FROM jobs
WHERE NOT deleted AND flight_node IS NOT NULL AND state = %s
    AND flight_node NOT IN (SELECT node FROM nodes WHERE beat_at > %s)
ORDER BY id

-- name: orphans_by_database_clock
-- On the server's clock: a beat must be younger than the interval given.
SELECT id, version, data FROM jobs
WHERE NOT deleted AND flight_node IS NOT NULL AND state = %s
    AND flight_node NOT IN (SELECT node FROM nodes WHERE db_beat_at > now() - %s::interval)
ORDER BY id

-- name: lease_left
-- The holders of runs other than one node: how many, whether one never beat, their oldest beat on the
-- node's clock, and how long until their oldest beat is `ttl` old on the server's clock (the store reads
-- the one of its lease clock). Then, as a node asks this before each sleep, its share of the due rows
-- (`due_shared`): how many other nodes beat lately (within the second interval), and how many of those
-- sort before it. The rows known to be unreadable (the last parameter, an array of ids) hold no lease:
-- nothing can recover them.
SELECT count(*), bool_or(nodes.node IS NULL), min(nodes.beat_at),
    min(nodes.db_beat_at) + %s::interval - now(),
    (SELECT count(*) FROM nodes WHERE node != %s AND db_beat_at > now() - %s::interval),
    (SELECT count(*) FROM nodes WHERE node < %s AND db_beat_at > now() - %s::interval)
FROM (SELECT DISTINCT flight_node FROM jobs
    WHERE NOT deleted AND flight_node IS NOT NULL AND flight_node != %s AND id <> ALL(%s::bigint[])) AS holders
LEFT JOIN nodes ON nodes.node = holders.flight_node

-- The outbox of notifications (semantic 38; store/sql_outbox.py) -------------------------------------

-- name: add_notification
-- Idempotent by id: a transition detected twice (by two nodes, or in a replayed save) is stored once,
-- and the row already there is left as it is.
INSERT INTO notifications (id, channel, transition, source, status, created_at, next_attempt_at, attempts,
    delivered_at, claimed_by, claimed_until, data)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, NULL, %s)
ON CONFLICT (id) DO NOTHING

-- name: claim_notifications
-- The oldest due pending notifications that no live claim holds, now held by one node until the claim's
-- end. {lock} is empty on SQLite, whose write transaction (BEGIN IMMEDIATE) already excludes every
-- other claimer; on PostgreSQL it is FOR UPDATE SKIP LOCKED, so nodes claiming at once each take rows
-- the others do not hold, rather than waiting on each other's locks, and a row another node just
-- claimed is re-checked against its new claim before it is taken.
UPDATE notifications SET claimed_by = %s, claimed_until = %s
WHERE id IN (SELECT id FROM notifications
    WHERE status = 'pending' AND next_attempt_at <= %s AND (claimed_until IS NULL OR claimed_until <= %s)
    ORDER BY next_attempt_at, id LIMIT %s{lock})
RETURNING id, channel, transition, status, created_at, next_attempt_at, attempts, delivered_at, data

-- name: settle_notification
-- Written back by the node that holds it, and its claim ended; a row another node has since claimed
-- (this one's claim lapsed) is left alone.
UPDATE notifications SET status = %s, attempts = %s, next_attempt_at = %s, delivered_at = %s, data = %s,
    claimed_by = NULL, claimed_until = NULL
WHERE id = %s AND claimed_by = %s

-- name: add_digest
-- A digest, held by the node that folds it for as long as that node holds the first of its members.
INSERT INTO notifications (id, channel, transition, source, status, created_at, next_attempt_at, attempts,
    delivered_at, claimed_by, claimed_until, data)
SELECT %s, %s, %s, NULL, %s, %s, %s, 0, NULL, %s, claimed_until, %s FROM notifications WHERE id = %s
ON CONFLICT (id) DO NOTHING

-- name: sent_since
SELECT channel, count(*) FROM notifications WHERE status = 'delivered' AND delivered_at >= %s GROUP BY channel

-- name: next_notification_due
-- When the earliest pending notification can next be claimed: its next attempt, or its claim's end.
SELECT min(CASE WHEN claimed_until > next_attempt_at THEN claimed_until ELSE next_attempt_at END)
FROM notifications WHERE status = 'pending'

-- name: prune_notifications
-- Settled notifications (delivered, digested, abandoned) older than the retention go; pending ones stay.
DELETE FROM notifications WHERE status != 'pending' AND created_at < %s

-- name: notification_created_at
SELECT created_at FROM notifications WHERE id = %s

-- name: notifications_page
-- Newest first. {where} is empty, or ` WHERE ` and the conditions that apply: a source's own, and for a
-- page after a notification, `(created_at, id) < (%s, %s)`.
SELECT id, channel, transition, status, created_at, next_attempt_at, attempts, delivered_at, data
FROM notifications{where} ORDER BY created_at DESC, id DESC LIMIT %s

-- Locks ---------------------------------------------------------------------------------------------

-- name: schema_lock
-- Held by the transaction that creates or upgrades a schema: nodes that boot together wait in turn.
SELECT pg_advisory_xact_lock(%s, hashtext(%s))

-- name: exclusive_lock
SELECT pg_advisory_lock(%s)

-- name: exclusive_unlock
SELECT pg_advisory_unlock(%s)

-- The schema and its migrations ---------------------------------------------------------------------

-- name: schema_exists
SELECT count(*) FROM pg_namespace WHERE nspname = %s

-- name: schema_usable
SELECT has_schema_privilege(%s, 'USAGE')

-- name: use_schema_for_the_transaction
SELECT set_config('search_path', %s, true)

-- name: configure_connection
-- Unqualified names reach this store's schema only; instants come back in UTC.
SELECT set_config('search_path', %s, false), set_config('TimeZone', 'UTC', false)

-- name: tables
SELECT tablename FROM pg_tables WHERE schemaname = %s

-- name: schema_version
SELECT coalesce(max(version), 0) FROM schema_migrations

-- name: record_migration
INSERT INTO schema_migrations (version) VALUES (%s)

-- The audit log ------------------------------------------------------------------------------------

-- name: insert_audit
-- In the transaction of the mutation it records. Idempotent by key: a replayed write records it once.
INSERT INTO audit (key, at, source, action, job_id, name, owner, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (key) DO NOTHING

-- name: audit
-- Newest first. {where} is empty, or ` WHERE ` and the conditions that apply: a source's, a job's, a
-- name's, and for a page `seq < %s`.
SELECT seq, key, at, source, action, job_id, name, owner, data FROM audit{where} ORDER BY seq DESC LIMIT %s

-- name: audit_of_reader
-- What a source may read: the entries it wrote or about its own jobs, newest first. Each side walks its
-- own index (audit_source, audit_owner) backwards for a page at most, so the cost is a page, not the
-- source's whole log (an OR of the two columns would read and sort every entry of the source). {rest} is
-- empty or ` AND ` and the other conditions, given once for each side.
SELECT seq, key, at, source, action, job_id, name, owner, data FROM audit WHERE seq IN (
    SELECT seq FROM (SELECT seq FROM audit WHERE source = %s{rest} ORDER BY seq DESC LIMIT %s) AS by_source
    UNION
    SELECT seq FROM (SELECT seq FROM audit WHERE owner = %s{rest} ORDER BY seq DESC LIMIT %s) AS by_owner
) ORDER BY seq DESC LIMIT %s

-- name: prune_audit
-- Retention (node.audit_retention), through the index audit_at.
DELETE FROM audit WHERE at < %s
