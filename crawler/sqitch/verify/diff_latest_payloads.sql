-- Verify taskpool:diff_latest_payloads on pg

BEGIN;

SELECT has_function_privilege('diff_latest_payloads(integer)', 'execute');

ROLLBACK;
