-- Chats that started the Telegram bot, and where they stand with it.
CREATE TABLE telegram_subscribers (
    chat_id          INTEGER PRIMARY KEY,
    username         TEXT NOT NULL DEFAULT '',
    first_name       TEXT NOT NULL DEFAULT '',
    start_payload    TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL, -- subscribed, unsubscribed or blocked
    subscribed_since TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);
CREATE INDEX telegram_subscribers_status ON telegram_subscribers (status);
CREATE INDEX telegram_subscribers_page ON telegram_subscribers (subscribed_since, chat_id);

-- Update ids already processed, so a redelivered update changes nothing.
-- Rows older than the retention are pruned.
CREATE TABLE telegram_updates (
    update_id    INTEGER PRIMARY KEY,
    processed_at TIMESTAMP NOT NULL
);
CREATE INDEX telegram_updates_processed ON telegram_updates (processed_at);

-- Named leases: one holder at a time until expires_at (the Telegram
-- poller, and any other singleton background work).
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
