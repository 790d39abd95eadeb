-- Email as a broadcast channel (issue 26): a broadcast names its channels
-- (",push," as every broadcast did, ",email,", or both, stored as
-- joinList does); its email part walks the audience's accounts after
-- email_cursor (email_done once the walk is over), queueing one
-- notification_email job per account in the transaction that moves the
-- cursor, and counts its email part apart from the devices: the emails
-- queued, and the accounts skipped (opted out of the category's email,
-- over its cap, without a verified real address).
ALTER TABLE notification_jobs ADD COLUMN channels TEXT NOT NULL DEFAULT ',push,';
ALTER TABLE notification_jobs ADD COLUMN email_cursor TEXT NOT NULL DEFAULT '';
ALTER TABLE notification_jobs ADD COLUMN email_done BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE notification_jobs ADD COLUMN emailed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notification_jobs ADD COLUMN email_opted_out INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notification_jobs ADD COLUMN email_capped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notification_jobs ADD COLUMN no_email_address INTEGER NOT NULL DEFAULT 0;
