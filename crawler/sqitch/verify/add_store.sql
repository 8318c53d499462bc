-- Verify taskpool:add_store on pg

BEGIN;

-- Raises when the function is missing; the assertion checks that only operators may call it.
DO $$
BEGIN
    ASSERT NOT has_function_privilege('taskpool_worker', 'add_store(text, text, text, text, text)', 'execute'),
        'taskpool_worker must not be able to execute add_store';
END $$;

ROLLBACK;
