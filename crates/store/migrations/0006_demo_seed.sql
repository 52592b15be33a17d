-- CallLock store: the demo data is written once per database (issue 23).
--
-- `seed_demo` runs at the start of every `calllock chat`, `demo` and
-- `serve` on the embedded backend. It used to rewrite the demo rows each
-- time, undoing what calls had changed (a reschedule shown by `calllock
-- agenda` reverted on the next call). Now the first seed leaves this row
-- and every later one sees it and writes nothing; the seed itself only
-- inserts rows that are absent, never updates one, so a database seeded
-- before this table existed keeps its rows too.
CREATE TABLE demo_seed (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    seeded_unix DOUBLE PRECISION NOT NULL
);
