-- Verify taskpool:diff_role on pg

BEGIN;

SELECT 1/has_function_privilege('diff_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'execute')::int;
-- a starting worker calls it
SELECT 1/has_function_privilege('taskpool_worker', 'diff_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'execute')::int;

ROLLBACK;
