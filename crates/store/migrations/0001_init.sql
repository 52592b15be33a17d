-- CallLock store, initial schema.
-- Portable on purpose (the same file runs on SQLite and PostgreSQL): TEXT,
-- BIGINT for integers (INTEGER would be int4 on PostgreSQL), DOUBLE
-- PRECISION for floats, application-generated text ids (no AUTOINCREMENT /
-- SERIAL), timestamps as ISO-8601 text plus unix seconds where range queries
-- need them.
--
-- Edited in place when PostgreSQL support came (INTEGER -> BIGINT): nothing
-- was deployed yet. On SQLite both spell the same INTEGER affinity, so a
-- development database created from the first version is schema-identical;
-- `Store` accepts its old checksum (see `compat_0001` in src/lib.rs).

CREATE TABLE customers (
    phone      TEXT PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    address    TEXT NOT NULL DEFAULT '',
    zip        TEXT NOT NULL DEFAULT '',
    notes      TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE appointments (
    uid              TEXT PRIMARY KEY,
    phone            TEXT NOT NULL REFERENCES customers (phone),
    customer_name    TEXT NOT NULL DEFAULT '',
    -- local start with offset, e.g. 2026-02-24T09:00:00-06:00
    start_at         TEXT NOT NULL,
    start_unix       BIGINT NOT NULL,
    duration_minutes BIGINT NOT NULL,
    problem          TEXT NOT NULL DEFAULT '',
    address          TEXT NOT NULL DEFAULT '',
    -- booked | cancelled
    status           TEXT NOT NULL,
    call_id          TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX appointments_phone ON appointments (phone);
CREATE INDEX appointments_start ON appointments (start_unix);

CREATE TABLE callbacks (
    id            TEXT PRIMARY KEY,
    phone         TEXT NOT NULL,
    call_id       TEXT NOT NULL DEFAULT '',
    -- service | estimate | billing | warranty | follow_up (D-6)
    callback_type TEXT NOT NULL,
    reason        TEXT NOT NULL DEFAULT '',
    customer_name TEXT NOT NULL DEFAULT '',
    -- urgent | normal
    urgency       TEXT NOT NULL,
    -- open | done
    status        TEXT NOT NULL,
    promised_by   TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    created_unix  BIGINT NOT NULL,
    due_by        TEXT NOT NULL
);
CREATE INDEX callbacks_phone ON callbacks (phone);
CREATE INDEX callbacks_call ON callbacks (call_id);

CREATE TABLE sales_leads (
    id           TEXT PRIMARY KEY,
    phone        TEXT NOT NULL DEFAULT '',
    call_id      TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    created_unix BIGINT NOT NULL
);
CREATE INDEX sales_leads_phone ON sales_leads (phone);
CREATE INDEX sales_leads_call ON sales_leads (call_id);

CREATE TABLE calls (
    call_id         TEXT PRIMARY KEY,
    phone           TEXT NOT NULL DEFAULT '',
    started_at      TEXT NOT NULL,
    started_unix    BIGINT NOT NULL,
    ended_at        TEXT,
    final_state     TEXT NOT NULL DEFAULT '',
    end_call_reason TEXT NOT NULL DEFAULT '',
    booking_status  TEXT NOT NULL DEFAULT '',
    urgency         TEXT NOT NULL DEFAULT '',
    priority_color  TEXT NOT NULL DEFAULT '',
    revenue_tier    TEXT NOT NULL DEFAULT '',
    customer_name   TEXT NOT NULL DEFAULT '',
    problem         TEXT NOT NULL DEFAULT '',
    -- the full post-call record, JSON
    record          TEXT NOT NULL,
    -- the transcript, JSON
    transcript      TEXT NOT NULL
);
CREATE INDEX calls_phone ON calls (phone);
CREATE INDEX calls_started ON calls (started_unix);
