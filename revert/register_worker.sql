-- Revert taskpool:register_worker from pg

-- Nothing to undo: deploy/register_worker.sql redefined register_worker as register_worker_concurrency had left it.

BEGIN;
COMMIT;
