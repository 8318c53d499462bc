-- Revert taskpool:task_metric_totals from pg

BEGIN;

DROP TABLE task_metric_watermark;
DROP TABLE task_metric_totals;

COMMIT;
