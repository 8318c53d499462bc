-- Verify taskpool:platform_token_wait on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'platform_token_wait(text)', 'EXECUTE');

ROLLBACK;
