-- Verify taskpool:set_retention_policy on pg

BEGIN;

SELECT has_function_privilege('set_retention_policy(text, interval, boolean, integer, text[])', 'execute');

ROLLBACK;
