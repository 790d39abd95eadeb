-- The console overview's counts of accounts and devices, maintained as
-- rows change (issue 23: at a million accounts and ten million devices a
-- COUNT over each table took 2.5 s; the overview must answer in 200 ms).
-- Each statement that changes accounts or devices adds its net change per
-- counter, computed from its transition tables (one upsert per counter a
-- statement touches, not one per row). A counter is spread over 16 rows
-- (the connection's pid picks one) so that concurrent writers seldom wait
-- for each other; reading sums them. "New in the last 24 hours" is not a
-- counter: it is counted through the index below.
-- Statements inside the function bodies end with "; --" so that the
-- migration runner (which splits a file at a semicolon ending a line)
-- keeps each body whole.
CREATE TABLE overview_counters (
    name  TEXT NOT NULL,
    shard INTEGER NOT NULL,
    value BIGINT NOT NULL,
    PRIMARY KEY (name, shard)
);

CREATE INDEX accounts_created_live ON accounts (created_at) WHERE deleted_at IS NULL;

CREATE FUNCTION overview_account_counters(a accounts) RETURNS TEXT[] LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN a.deleted_at IS NOT NULL THEN ARRAY[]::TEXT[] ELSE
        ARRAY['accounts.total'] || CASE WHEN a.email_verified_at IS NOT NULL THEN ARRAY['accounts.verified'] ELSE ARRAY[]::TEXT[] END
            || CASE WHEN a.disabled_at IS NOT NULL THEN ARRAY['accounts.disabled'] ELSE ARRAY[]::TEXT[] END
    END $$;

CREATE FUNCTION overview_device_counter(d devices) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN NOT d.active THEN NULL
        WHEN d.push_token IS NULL THEN 'devices.missing.' || d.platform
        WHEN d.push_token_status = 'valid' THEN 'devices.valid.' || d.platform
        ELSE 'devices.invalid.' || d.platform END $$;

CREATE FUNCTION overview_accounts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO overview_counters (name, shard, value)
        SELECT c, pg_backend_pid() % 16, count(*) FROM new_rows n, unnest(overview_account_counters(n)) c GROUP BY c ORDER BY c
        ON CONFLICT (name, shard) DO UPDATE SET value = overview_counters.value + excluded.value; --
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO overview_counters (name, shard, value)
        SELECT c, pg_backend_pid() % 16, -count(*) FROM old_rows o, unnest(overview_account_counters(o)) c GROUP BY c ORDER BY c
        ON CONFLICT (name, shard) DO UPDATE SET value = overview_counters.value + excluded.value; --
    ELSE
        INSERT INTO overview_counters (name, shard, value)
        SELECT c, pg_backend_pid() % 16, sum(d) FROM (
            SELECT c, 1 AS d FROM new_rows n, unnest(overview_account_counters(n)) c
            UNION ALL
            SELECT c, -1 FROM old_rows o, unnest(overview_account_counters(o)) c
        ) x GROUP BY c HAVING sum(d) <> 0 ORDER BY c
        ON CONFLICT (name, shard) DO UPDATE SET value = overview_counters.value + excluded.value; --
    END IF; --
    RETURN NULL; --
END $$;

CREATE FUNCTION overview_devices_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO overview_counters (name, shard, value)
        SELECT c, pg_backend_pid() % 16, count(*) FROM (SELECT overview_device_counter(n) AS c FROM new_rows n) x
        WHERE c IS NOT NULL GROUP BY c ORDER BY c
        ON CONFLICT (name, shard) DO UPDATE SET value = overview_counters.value + excluded.value; --
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO overview_counters (name, shard, value)
        SELECT c, pg_backend_pid() % 16, -count(*) FROM (SELECT overview_device_counter(o) AS c FROM old_rows o) x
        WHERE c IS NOT NULL GROUP BY c ORDER BY c
        ON CONFLICT (name, shard) DO UPDATE SET value = overview_counters.value + excluded.value; --
    ELSE
        INSERT INTO overview_counters (name, shard, value)
        SELECT c, pg_backend_pid() % 16, sum(d) FROM (
            SELECT overview_device_counter(n) AS c, 1 AS d FROM new_rows n
            UNION ALL
            SELECT overview_device_counter(o), -1 FROM old_rows o
        ) x WHERE c IS NOT NULL GROUP BY c HAVING sum(d) <> 0 ORDER BY c
        ON CONFLICT (name, shard) DO UPDATE SET value = overview_counters.value + excluded.value; --
    END IF; --
    RETURN NULL; --
END $$;

CREATE TRIGGER overview_accounts_insert AFTER INSERT ON accounts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION overview_accounts_changed();
CREATE TRIGGER overview_accounts_update AFTER UPDATE ON accounts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION overview_accounts_changed();
CREATE TRIGGER overview_accounts_delete AFTER DELETE ON accounts REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION overview_accounts_changed();
CREATE TRIGGER overview_devices_insert AFTER INSERT ON devices REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION overview_devices_changed();
CREATE TRIGGER overview_devices_update AFTER UPDATE ON devices REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION overview_devices_changed();
CREATE TRIGGER overview_devices_delete AFTER DELETE ON devices REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION overview_devices_changed();

-- The rows already there.
INSERT INTO overview_counters (name, shard, value)
SELECT c, 0, count(*) FROM accounts a, unnest(overview_account_counters(a)) c GROUP BY c;
INSERT INTO overview_counters (name, shard, value)
SELECT c, 0, count(*) FROM (SELECT overview_device_counter(d) AS c FROM devices d) x WHERE c IS NOT NULL GROUP BY c;
