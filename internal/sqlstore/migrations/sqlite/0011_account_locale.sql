-- The language an account's emails are written in: a canonical BCP 47 tag
-- (en, de, pt-BR), or '' for the default (English).
ALTER TABLE accounts ADD COLUMN locale TEXT NOT NULL DEFAULT '';
