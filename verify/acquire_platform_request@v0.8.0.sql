-- Verify taskpool:acquire_platform_request on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'acquire_platform_request(text)', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'acquire_platform_request' AND pg_get_functiondef(oid) LIKE '%requests_total%';

ROLLBACK;
