-- Revert taskpool:task_status_transition_allowed from pg

BEGIN;

DROP TRIGGER _500_compile ON task_status_transitions;
DROP FUNCTION tg_task_status_transitions__compile();
DROP FUNCTION _task_status_transition_allowed(text, text);

COMMIT;
