-- Revert taskpool:tasks_matching from pg

BEGIN;

DROP FUNCTION tasks_matching(text, text, bigint, text, text, timestamptz, timestamptz);
DROP FUNCTION _tasks_filtered(text, text, bigint, text, text, timestamptz, timestamptz);
DROP FUNCTION _check_task_filter(text, text, bigint, text, text, timestamptz, timestamptz);

COMMIT;
