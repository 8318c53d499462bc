-- Revert taskpool:mark_task_completed from pg

BEGIN;

DROP FUNCTION mark_task_completed(bigint, jsonb);

-- A task an operator completed from pending stays completed: the row is history, and the
-- transition table only rules the changes still to come.
DELETE FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'completed';

COMMIT;
