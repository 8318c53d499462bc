-- Revert taskpool:tg_task_status_transitions__compile from pg

-- Nothing to undo: deploy/tg_task_status_transitions__compile.sql redefined tg_task_status_transitions__compile as task_status_transition_allowed had left it.

BEGIN;
COMMIT;
