-- Verify taskpool:task_workers_concurrency on pg

BEGIN;

SELECT concurrency FROM task_workers WHERE FALSE;

ROLLBACK;
