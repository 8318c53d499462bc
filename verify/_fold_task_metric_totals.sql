-- Verify taskpool:_fold_task_metric_totals on pg

BEGIN;

SELECT has_function_privilege('_fold_task_metric_totals()', 'execute');

ROLLBACK;
