-- Revert taskpool:_fold_task_metric_totals from pg

BEGIN;

DROP FUNCTION _fold_task_metric_totals();

COMMIT;
