-- Verify taskpool:create_schedule on pg

BEGIN;

SELECT has_function_privilege('create_schedule(text, text, text, interval, text, integer, text, jsonb, text, integer, integer, text, boolean, timestamptz)', 'execute');

ROLLBACK;
