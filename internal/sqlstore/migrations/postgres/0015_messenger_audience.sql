-- A messenger broadcast may go to the linked chats of an audience instead
-- of every subscribed chat: audience_linked says so, and the three lists
-- narrow it as a push broadcast's audience does (',a,b,' or '' for all).
ALTER TABLE messenger_broadcasts ADD COLUMN audience_linked BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE messenger_broadcasts ADD COLUMN audience_platforms TEXT NOT NULL DEFAULT '';
ALTER TABLE messenger_broadcasts ADD COLUMN audience_plans TEXT NOT NULL DEFAULT '';
ALTER TABLE messenger_broadcasts ADD COLUMN audience_status TEXT NOT NULL DEFAULT '';
