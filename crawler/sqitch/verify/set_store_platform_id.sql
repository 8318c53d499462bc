-- Verify taskpool:set_store_platform_id on pg

BEGIN;

-- Raises when the function is missing; the assertion checks the grant.
DO $$
BEGIN
    ASSERT has_function_privilege('taskpool_worker', 'set_store_platform_id(integer, text)', 'execute'),
        'taskpool_worker must be able to execute set_store_platform_id';
END $$;

ROLLBACK;
