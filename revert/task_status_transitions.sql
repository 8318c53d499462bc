-- Revert taskpool:task_status_transitions from pg

BEGIN;

DROP TABLE task_status_transitions;

COMMIT;
