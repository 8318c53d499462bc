-- Verify taskpool:_concurrency_room on pg

BEGIN;

SELECT has_function_privilege('_concurrency_room(text, text)', 'execute');

ROLLBACK;
