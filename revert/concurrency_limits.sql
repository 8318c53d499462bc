-- Revert taskpool:concurrency_limits from pg

BEGIN;

DROP TABLE concurrency_slots;
DROP TABLE concurrency_limits;

COMMIT;
