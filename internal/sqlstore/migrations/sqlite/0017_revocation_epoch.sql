-- Every revocation of a session on SQLite (by the server or by the CLI, another
-- process) adds one to n in its transaction; the server polls n, and a
-- change empties its cache of live sessions. PostgreSQL announces
-- revocations by NOTIFY instead.
CREATE TABLE revocation_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO revocation_epoch (id, n) VALUES (1, 0);
