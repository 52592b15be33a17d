-- CallLock store: the call event log, call lifecycle, the durable outbox.
-- Portable like 0001: TEXT, BIGINT, DOUBLE PRECISION; application ids.

-- Call lifecycle lives on the `calls` row itself (not a side table): one row
-- per call from its first second, so the listing is one query over one
-- table, interrupted calls are listed like finished ones, and the finished
-- record's upsert (`save_call`) flips the status in the same statement.
-- A call begun with `begin_call` has placeholder record/transcript
-- ('null' / '[]') until its finished record is saved; its events are the
-- record meanwhile.
--
-- status: active | completed | interrupted. Rows from before this migration
-- are finished records, hence the default.
ALTER TABLE calls ADD COLUMN status TEXT NOT NULL DEFAULT 'completed';
-- The process (instance name) that owns a live call.
ALTER TABLE calls ADD COLUMN instance TEXT NOT NULL DEFAULT '';
-- 1 once post-call processing is done (finished records: always).
ALTER TABLE calls ADD COLUMN postcall_done BIGINT NOT NULL DEFAULT 1;
CREATE INDEX calls_status ON calls (status, instance);

-- Everything that happens in a call, appended as it happens (ARCHITECTURE:
-- history as an event log). No foreign key to `calls`: an append is one
-- index insert, whatever else exists.
CREATE TABLE call_events (
    call_id TEXT NOT NULL,
    seq     BIGINT NOT NULL,
    at_unix DOUBLE PRECISION NOT NULL,
    kind    TEXT NOT NULL,
    -- JSON
    data    TEXT NOT NULL,
    PRIMARY KEY (call_id, seq)
);

-- Deliveries that must not be lost (D-17): dashboard job, call record,
-- alerts, callbacks that could not be created. Retried with backoff until
-- delivered (or declared dead); leased to one worker at a time.
CREATE TABLE outbox (
    id                TEXT PRIMARY KEY,
    call_id           TEXT NOT NULL,
    -- order within the call: item n+1 is never attempted while n is pending
    seq               BIGINT NOT NULL,
    -- job | call | alert | callback
    kind              TEXT NOT NULL,
    target_url        TEXT NOT NULL,
    -- JSON
    payload           TEXT NOT NULL,
    -- pending | delivered | dead
    status            TEXT NOT NULL,
    attempts          BIGINT NOT NULL DEFAULT 0,
    next_attempt_unix DOUBLE PRECISION NOT NULL,
    last_error        TEXT NOT NULL DEFAULT '',
    lease_owner       TEXT,
    lease_until       DOUBLE PRECISION,
    created_unix      DOUBLE PRECISION NOT NULL,
    delivered_unix    DOUBLE PRECISION,
    -- JSON
    response          TEXT
);
-- Per-call order (and the "earlier item still pending?" probe of the claim).
CREATE UNIQUE INDEX outbox_call_seq ON outbox (call_id, seq);
-- The claim scan: due pending items.
CREATE INDEX outbox_pending_due ON outbox (next_attempt_unix) WHERE status = 'pending';
-- Listings, newest first.
CREATE INDEX outbox_created ON outbox (created_unix);
