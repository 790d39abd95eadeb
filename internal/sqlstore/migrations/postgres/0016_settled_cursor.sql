-- A broadcast's walk claims devices without writing a row per device:
-- settled_cursor is the last device id up to which every claimed device's
-- outcome is written. A delivery row now exists only for an outcome
-- written before its batch settled (and for failures, retries and dead
-- tokens); a successful send in a settled batch is only counted. After a
-- crash, the devices between settled_cursor and walk_cursor without a row
-- are the ones whose outcome is unknown, and are sent again.
ALTER TABLE notification_jobs ADD COLUMN settled_cursor TEXT NOT NULL DEFAULT '';
-- Jobs claimed before this migration wrote a row per claimed device.
UPDATE notification_jobs SET settled_cursor = walk_cursor;
