-- Verify taskpool:task_metric_totals on pg

BEGIN;

SELECT role, counter, total FROM task_metric_totals WHERE false;
SELECT 1/COUNT(*) FROM task_metric_watermark WHERE singleton;

ROLLBACK;
