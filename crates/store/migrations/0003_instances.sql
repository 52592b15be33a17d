-- Live CallLock processes sharing the database, each with a heartbeat. A
-- live call belongs to the process named in calls.instance; it is taken
-- over (marked interrupted and post-processed by another process) only when
-- that process's heartbeat is older than the lease, or it has none — never
-- because another process with the same host name started.
CREATE TABLE instances (
    instance       TEXT PRIMARY KEY,
    started_unix   DOUBLE PRECISION NOT NULL,
    heartbeat_unix DOUBLE PRECISION NOT NULL
);
