-- Revert taskpool:_dedupe_period_start from pg

-- Nothing to undo: deploy/_dedupe_period_start.sql redefined _dedupe_period_start as worker_tasks_dedupe_window had left it.

BEGIN;
COMMIT;
