-- Verify taskpool:_check_repeated_call on pg

BEGIN;

SELECT has_function_privilege('_check_repeated_call(bigint, text, integer, text)', 'execute');

ROLLBACK;
