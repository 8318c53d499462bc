-- Verify taskpool:taskpool_metrics on pg

BEGIN;

SELECT has_function_privilege('pg_monitor', 'taskpool_metrics()', 'execute');
SELECT metric, kind, help, labels, value FROM taskpool_metrics() WHERE false;

ROLLBACK;
