-- Revert taskpool:dispensaries from pg

BEGIN;

DROP TABLE dispensaries;

COMMIT;
