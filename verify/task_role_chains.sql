-- Verify taskpool:task_role_chains on pg

BEGIN;

SELECT from_role, to_role, result_key, per_store_ids FROM task_role_chains WHERE FALSE;

ROLLBACK;
