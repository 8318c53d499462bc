-- Verify taskpool:apply_menu_payload on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'apply_menu_payload(bigint, jsonb)', 'execute');

ROLLBACK;
