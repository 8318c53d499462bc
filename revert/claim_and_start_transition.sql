-- Revert taskpool:claim_and_start_transition from pg

BEGIN;

DELETE FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'running';

COMMIT;
