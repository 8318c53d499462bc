-- Verify taskpool:worker_tasks_headers on pg

BEGIN;

SELECT headers FROM worker_tasks WHERE false;
SELECT 1/(_task_headers_problem('{"traceparent": "00-x"}') IS NULL)::int;
SELECT 1/(_task_headers_problem('{"n": 1}') IS NOT NULL)::int;

ROLLBACK;
