-- Verify taskpool:apply_retention on pg

BEGIN;

SELECT has_function_privilege('apply_retention(integer, numeric, boolean)', 'execute');

ROLLBACK;
