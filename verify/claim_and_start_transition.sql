-- Verify taskpool:claim_and_start_transition on pg

BEGIN;

SELECT 1/COUNT(*) FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'running';

ROLLBACK;
