-- Verify taskpool:concurrency_limits on pg

BEGIN;

SELECT kind, key, max_running, updated_at FROM concurrency_limits WHERE false;
SELECT kind, key, slot, task_id FROM concurrency_slots WHERE false;

ROLLBACK;
