-- Revert taskpool:retention_policies from pg

BEGIN;

DROP TABLE retention_policies;

COMMIT;
