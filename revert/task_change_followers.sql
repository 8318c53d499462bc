-- Revert taskpool:task_change_followers from pg

BEGIN;

DROP TABLE task_change_followers;

COMMIT;
