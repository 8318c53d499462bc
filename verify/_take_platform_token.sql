-- Verify taskpool:_take_platform_token on pg

BEGIN;

SELECT 1 / (NOT has_function_privilege('taskpool_worker', '_take_platform_token(text, boolean)', 'EXECUTE'))::integer;

ROLLBACK;
