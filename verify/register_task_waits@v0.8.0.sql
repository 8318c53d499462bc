-- Verify taskpool:register_task_waits on pg

BEGIN;

SELECT * FROM register_task_waits('{}'::bigint[]);
SELECT 1/(unregister_task_waits() = 0)::int;

ROLLBACK;
