-- CallLock store, initial schema.
-- Portable on purpose (SQLite now, PostgreSQL later): TEXT / INTEGER / REAL
-- columns, application-generated text ids, timestamps as ISO-8601 text plus
-- unix seconds where range queries need them.

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
    start_unix       INTEGER NOT NULL,
    duration_minutes INTEGER NOT NULL,
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
    created_unix  INTEGER NOT NULL,
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
    created_unix INTEGER NOT NULL
);
CREATE INDEX sales_leads_phone ON sales_leads (phone);
CREATE INDEX sales_leads_call ON sales_leads (call_id);

CREATE TABLE calls (
    call_id         TEXT PRIMARY KEY,
    phone           TEXT NOT NULL DEFAULT '',
    started_at      TEXT NOT NULL,
    started_unix    INTEGER NOT NULL,
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
