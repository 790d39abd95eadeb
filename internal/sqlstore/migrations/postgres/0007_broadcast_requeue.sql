-- When a sweeper last queued a new River job for a broadcast whose
-- worker stopped renewing its lease, so replicas do not queue it twice.
ALTER TABLE notification_jobs ADD COLUMN requeued_at TIMESTAMPTZ;
