-- A deleted guest kept its install id, and the unique index on it then
-- refused that install a new guest; the tombstone now clears it, and so
-- does this for the guests deleted before.
UPDATE accounts SET guest_install_id = NULL WHERE deleted_at IS NOT NULL AND guest_install_id IS NOT NULL;
