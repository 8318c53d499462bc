-- Verify taskpool:task_history_settings on pg

BEGIN;

SELECT 1/count(*)::integer FROM task_history_settings WHERE history_after >= interval '0' AND batch_size > 0 AND max_batches > 0;

ROLLBACK;
