-- Verify taskpool:_retry_delay on pg

BEGIN;

SELECT has_function_privilege('_retry_delay(text, integer, interval, interval)', 'execute');

ROLLBACK;
