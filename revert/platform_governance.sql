-- Revert taskpool:platform_governance from pg

BEGIN;

DROP TABLE platform_governance;

COMMIT;
