-- Deploy taskpool:prune_tasks_in_batches to pg
-- requires: prune_tasks

BEGIN;
SET client_min_messages = 'warning';

-- prune_tasks_in_batches
-- Prunes every finished task older than older_than (at most max_tasks), batch_size at a time, committing after each batch.
CREATE PROCEDURE prune_tasks_in_batches(
    older_than   interval,
    batch_size   integer DEFAULT 1000,
    max_tasks    integer DEFAULT NULL,
    INOUT pruned bigint  DEFAULT NULL)
LANGUAGE plpgsql
AS $$
-- Example:
--   CALL prune_tasks_in_batches(interval '30 days');              -- pruned: how many went
--   CALL prune_tasks_in_batches(interval '7 days', batch_size := 500, max_tasks := 100000);
-- Each batch is one prune_tasks(older_than, batch_size), oldest first, in a transaction of its
-- own: no batch holds its locks, or keeps vacuum from the rows it deleted, while the next one
-- runs, and a prune stopped half-way keeps the batches it committed. It ends with the first
-- batch that comes back short (nothing older is left, or the rest is locked by someone else).
-- Call it outside a transaction block, as autocommit psql or pyworker prune do: inside one, it
-- can only prune what fits in one batch and raises 2D000 at its first commit.
-- pruned is its output: what it is given is ignored.
DECLARE
    v_wanted integer;
    v_batch  integer;
BEGIN
    IF prune_tasks_in_batches.batch_size IS NULL OR prune_tasks_in_batches.batch_size <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('batch_size must be positive, not %s',
                             coalesce(prune_tasks_in_batches.batch_size::text, 'NULL'));
    END IF;
    pruned := 0;
    LOOP
        -- least() skips a NULL max_tasks; a max_tasks below 1 is refused by prune_tasks
        v_wanted := least(prune_tasks_in_batches.batch_size, prune_tasks_in_batches.max_tasks - pruned);
        v_batch := prune_tasks(prune_tasks_in_batches.older_than, v_wanted);
        pruned := pruned + v_batch;
        EXIT WHEN v_batch < v_wanted OR pruned = prune_tasks_in_batches.max_tasks;
        COMMIT;
    END LOOP;
END;
$$;

REVOKE ALL ON PROCEDURE prune_tasks_in_batches(interval, integer, integer, bigint) FROM PUBLIC;

COMMIT;
