-- Verify taskpool:acquire_platform_request on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'acquire_platform_request(text)', 'EXECUTE');
-- the bucket step that reads the clock after the platform's row lock
SELECT 1 / (position('_take_platform_token' IN prosrc) > 0)::integer
FROM pg_proc WHERE oid = 'acquire_platform_request(text)'::regprocedure;

ROLLBACK;
