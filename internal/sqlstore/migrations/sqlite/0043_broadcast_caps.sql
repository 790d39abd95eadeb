-- Caps for broadcasts (issue 26): a broadcast's job keeps its category's
-- cap as it was when the job was created (0: uncapped), so the walk reads
-- it from the row and a change of configuration mid-job changes nothing,
-- and counts the devices its walk skipped because their owner already had
-- the day's cap of the category.
ALTER TABLE notification_jobs ADD COLUMN cap_per_day INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notification_jobs ADD COLUMN capped INTEGER NOT NULL DEFAULT 0;
