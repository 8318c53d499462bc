-- Verify taskpool:worker_tasks_dedupe_window on pg

BEGIN;

SELECT dedupe_window FROM worker_tasks WHERE false;
SELECT 1/(_dedupe_period_start('2026-11-26 10:42:17+00', interval '1 hour') = '2026-11-26 10:00:00+00')::int;
SELECT 1/COUNT(*) FROM pg_catalog.pg_index
WHERE indexrelid = 'worker_tasks_one_per_dedupe_period_idx'::regclass AND indisunique;

ROLLBACK;
