-- Revert taskpool:spent_attempt_transition from pg

BEGIN;

DELETE FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'failed';

COMMIT;
