-- Verify taskpool:spent_attempt_transition on pg

BEGIN;

SELECT 1/COUNT(*) FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'failed';

ROLLBACK;
