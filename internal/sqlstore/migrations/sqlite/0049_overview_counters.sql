-- The console overview's counts of accounts and devices, maintained as
-- rows change (see the PostgreSQL migration for why). SQLite has only
-- row triggers: each row's change moves its counters by one; one writer
-- at a time, so a counter is one row (shard 0). Statements inside the
-- trigger bodies end with "; --" so that the migration runner (which
-- splits a file at a semicolon ending a line) keeps each body whole.
CREATE TABLE overview_counters (
    name  TEXT NOT NULL,
    shard INTEGER NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (name, shard)
);

CREATE INDEX accounts_created_live ON accounts (created_at) WHERE deleted_at IS NULL;


CREATE TRIGGER overview_accounts_insert AFTER INSERT ON accounts WHEN NEW.deleted_at IS NULL BEGIN
    INSERT INTO overview_counters (name, shard, value)
    SELECT c, 0, 1 FROM (SELECT 'accounts.total' AS c UNION ALL SELECT 'accounts.verified' WHERE NEW.email_verified_at IS NOT NULL
        UNION ALL SELECT 'accounts.disabled' WHERE NEW.disabled_at IS NOT NULL) WHERE true
    ON CONFLICT (name, shard) DO UPDATE SET value = value + 1; --
END;

CREATE TRIGGER overview_accounts_delete AFTER DELETE ON accounts WHEN OLD.deleted_at IS NULL BEGIN
    INSERT INTO overview_counters (name, shard, value)
    SELECT c, 0, -1 FROM (SELECT 'accounts.total' AS c UNION ALL SELECT 'accounts.verified' WHERE OLD.email_verified_at IS NOT NULL
        UNION ALL SELECT 'accounts.disabled' WHERE OLD.disabled_at IS NOT NULL) WHERE true
    ON CONFLICT (name, shard) DO UPDATE SET value = value - 1; --
END;

CREATE TRIGGER overview_accounts_update AFTER UPDATE OF deleted_at, email_verified_at, disabled_at ON accounts BEGIN
    INSERT INTO overview_counters (name, shard, value)
    SELECT c, 0, sum(d) FROM (
        SELECT 'accounts.total' AS c, 1 AS d WHERE NEW.deleted_at IS NULL
        UNION ALL SELECT 'accounts.verified', 1 WHERE NEW.deleted_at IS NULL AND NEW.email_verified_at IS NOT NULL
        UNION ALL SELECT 'accounts.disabled', 1 WHERE NEW.deleted_at IS NULL AND NEW.disabled_at IS NOT NULL
        UNION ALL SELECT 'accounts.total', -1 WHERE OLD.deleted_at IS NULL
        UNION ALL SELECT 'accounts.verified', -1 WHERE OLD.deleted_at IS NULL AND OLD.email_verified_at IS NOT NULL
        UNION ALL SELECT 'accounts.disabled', -1 WHERE OLD.deleted_at IS NULL AND OLD.disabled_at IS NOT NULL
    ) GROUP BY c HAVING sum(d) <> 0
    ON CONFLICT (name, shard) DO UPDATE SET value = value + excluded.value; --
END;

CREATE TRIGGER overview_devices_insert AFTER INSERT ON devices WHEN NEW.active BEGIN
    INSERT INTO overview_counters (name, shard, value)
    VALUES (CASE WHEN NEW.push_token IS NULL THEN 'devices.missing.' WHEN NEW.push_token_status = 'valid' THEN 'devices.valid.' ELSE 'devices.invalid.' END || NEW.platform, 0, 1)
    ON CONFLICT (name, shard) DO UPDATE SET value = value + 1; --
END;

CREATE TRIGGER overview_devices_delete AFTER DELETE ON devices WHEN OLD.active BEGIN
    INSERT INTO overview_counters (name, shard, value)
    VALUES (CASE WHEN OLD.push_token IS NULL THEN 'devices.missing.' WHEN OLD.push_token_status = 'valid' THEN 'devices.valid.' ELSE 'devices.invalid.' END || OLD.platform, 0, -1)
    ON CONFLICT (name, shard) DO UPDATE SET value = value - 1; --
END;

CREATE TRIGGER overview_devices_update AFTER UPDATE OF active, push_token, push_token_status, platform ON devices BEGIN
    INSERT INTO overview_counters (name, shard, value)
    SELECT c, 0, sum(d) FROM (
        SELECT CASE WHEN NEW.push_token IS NULL THEN 'devices.missing.' WHEN NEW.push_token_status = 'valid' THEN 'devices.valid.' ELSE 'devices.invalid.' END || NEW.platform AS c, 1 AS d WHERE NEW.active
        UNION ALL
        SELECT CASE WHEN OLD.push_token IS NULL THEN 'devices.missing.' WHEN OLD.push_token_status = 'valid' THEN 'devices.valid.' ELSE 'devices.invalid.' END || OLD.platform, -1 WHERE OLD.active
    ) GROUP BY c HAVING sum(d) <> 0
    ON CONFLICT (name, shard) DO UPDATE SET value = value + excluded.value; --
END;

-- The rows already there.
INSERT INTO overview_counters (name, shard, value)
SELECT c, 0, n FROM (
    SELECT 'accounts.total' AS c, count(*) AS n FROM accounts WHERE deleted_at IS NULL
    UNION ALL SELECT 'accounts.verified', count(*) FROM accounts WHERE deleted_at IS NULL AND email_verified_at IS NOT NULL
    UNION ALL SELECT 'accounts.disabled', count(*) FROM accounts WHERE deleted_at IS NULL AND disabled_at IS NOT NULL
) WHERE n > 0;
INSERT INTO overview_counters (name, shard, value)
SELECT CASE WHEN push_token IS NULL THEN 'devices.missing.' WHEN push_token_status = 'valid' THEN 'devices.valid.' ELSE 'devices.invalid.' END || platform, 0, count(*)
FROM devices WHERE active GROUP BY 1;
