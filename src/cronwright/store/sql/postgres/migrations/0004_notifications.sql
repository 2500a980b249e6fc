-- Version 3 to 4: the outbox of alert notifications (semantic 38). A notification is written in the
-- transaction of the transition it tells of, and delivered later, at least once, by whichever node
-- claims it. Never edit a released migration: add the next numbered file, and update schema.sql to match.

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
