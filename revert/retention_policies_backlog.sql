-- Revert taskpool:retention_policies_backlog from pg

BEGIN;

ALTER TABLE retention_policies
    DROP COLUMN backlog,
    DROP COLUMN behind_since;

COMMIT;
