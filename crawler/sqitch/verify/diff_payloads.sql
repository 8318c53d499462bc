-- Verify taskpool:diff_payloads on pg

BEGIN;

SELECT has_function_privilege('diff_payloads(bigint, bigint)', 'execute');

ROLLBACK;
