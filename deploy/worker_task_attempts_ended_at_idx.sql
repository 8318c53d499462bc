-- Deploy taskpool:worker_task_attempts_ended_at_idx to pg
-- requires: worker_task_attempts

BEGIN;
SET client_min_messages = 'warning';

CREATE INDEX worker_task_attempts_ended_at_idx ON worker_task_attempts (ended_at);
COMMENT ON INDEX worker_task_attempts_ended_at_idx IS
    'Serves v_worker_capacity: the attempts that failed in the last hour.';

COMMIT;
