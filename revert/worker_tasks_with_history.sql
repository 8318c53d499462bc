-- Revert taskpool:worker_tasks_with_history from pg

BEGIN;

DROP VIEW worker_tasks_with_history;

COMMIT;
