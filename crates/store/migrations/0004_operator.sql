-- The operator's sign-in for the web dashboard and API: one password,
-- kept only as an argon2 hash (PHC string), set by
-- `calllock operator password`.
CREATE TABLE operator_credentials (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    password_hash TEXT NOT NULL,
    set_unix      DOUBLE PRECISION NOT NULL
);
