-- Guest accounts (issue 25): an account made for an app install without
-- an email; guest_install_id names the install while it is a guest (one
-- live guest per install) and is cleared when it upgrades.
ALTER TABLE accounts ADD COLUMN guest_install_id TEXT;
CREATE UNIQUE INDEX accounts_guest_install ON accounts (guest_install_id) WHERE guest_install_id IS NOT NULL;
