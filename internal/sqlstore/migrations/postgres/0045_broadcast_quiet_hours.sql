-- Quiet hours for broadcasts (issue 26): a broadcast not marked urgent
-- holds the devices of owners inside their quiet hours; each is a
-- delivery row 'held' with the instant it is due (due_at), released by a
-- later pass of the same job. The job counts the devices held now, and
-- while rows are held but none is due it waits, running, for resume_at
-- (the earliest due_at), which the sweep respects.
ALTER TABLE notification_jobs ADD COLUMN urgent BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE notification_jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notification_jobs ADD COLUMN resume_at TIMESTAMPTZ;
ALTER TABLE notification_deliveries ADD COLUMN due_at TIMESTAMPTZ;
CREATE INDEX notification_deliveries_held ON notification_deliveries (job_id, due_at) WHERE status = 'held';
-- "At 09:00 in each recipient's time zone": the civil date and the
-- minutes after midnight the job is due at in each owner's zone (NULL for
-- a job sent at once); the walk holds the devices not yet due.
ALTER TABLE notification_jobs ADD COLUMN local_date TEXT;
ALTER TABLE notification_jobs ADD COLUMN local_minute INTEGER;
