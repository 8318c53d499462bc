-- Revert taskpool:task_history_settings from pg

BEGIN;

DROP TABLE task_history_settings;

COMMIT;
