-- Revert taskpool:heartbeat_tasks from pg

BEGIN;

DROP FUNCTION heartbeat_tasks(text, bigint[], integer[], uuid[]);

COMMIT;
