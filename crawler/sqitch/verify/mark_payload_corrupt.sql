-- Verify taskpool:mark_payload_corrupt on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'mark_payload_corrupt(bigint, text)', 'execute');

ROLLBACK;
