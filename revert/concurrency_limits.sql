-- Revert taskpool:concurrency_limits from pg

BEGIN;

ALTER TABLE worker_tasks DROP COLUMN concurrency_slotted;
DROP TABLE concurrency_slots;
DROP TABLE concurrency_limits;

COMMIT;
