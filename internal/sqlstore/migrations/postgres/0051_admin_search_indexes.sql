-- The admin search by email prefix, newest first (issue 23: a million
-- accounts): the ids of the live accounts whose address begins with the
-- prefix are read from this index alone (an index-only scan), the newest
-- page of them chosen, and only that page's rows read. With the plain
-- email index every matching row was read from the table to be sorted by
-- id: a prefix matching a few thousand accounts cost a thousand random
-- reads. (SQLite's LIKE cannot use an index on email: it is
-- case-insensitive; a search there scans, as it did.)
CREATE INDEX accounts_email_live ON accounts (email text_pattern_ops, id) WHERE deleted_at IS NULL;

-- Each account of a page shows its count of active devices, which the
-- registration's device limit counts too: from this index alone (the
-- devices of one account lie far apart in the table, a heap page each).
CREATE INDEX devices_account_live ON devices (account_id) WHERE active;
