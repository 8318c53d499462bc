-- Verify taskpool:worker_capacity on pg

BEGIN;

SELECT has_function_privilege('worker_capacity(text)', 'execute');

ROLLBACK;
