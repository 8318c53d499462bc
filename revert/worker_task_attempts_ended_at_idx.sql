-- Revert taskpool:worker_task_attempts_ended_at_idx from pg

BEGIN;

DROP INDEX worker_task_attempts_ended_at_idx;

COMMIT;
