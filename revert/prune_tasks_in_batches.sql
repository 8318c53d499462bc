-- Revert taskpool:prune_tasks_in_batches from pg

BEGIN;

DROP PROCEDURE prune_tasks_in_batches(interval, integer, integer, bigint);

COMMIT;
