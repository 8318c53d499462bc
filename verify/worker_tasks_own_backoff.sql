-- Verify taskpool:worker_tasks_own_backoff on pg

BEGIN;

SELECT backoff_base, backoff_cap FROM worker_tasks WHERE false;

ROLLBACK;
