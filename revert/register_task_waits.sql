-- Revert taskpool:register_task_waits from pg: back to the v0.8.0 body, which reads worker_tasks alone

BEGIN;
SET client_min_messages = 'warning';

-- register_task_waits
-- Enters the calling session as a waiter for tasks (and, with descendants, every task below them
-- through parent_id), and says where each task stands.
CREATE OR REPLACE FUNCTION register_task_waits(task_ids bigint[], descendants boolean DEFAULT false)
RETURNS TABLE (task_id bigint, parent_id bigint, status text, watched boolean)
LANGUAGE plpgsql
-- It marks worker_tasks.waited, which only the owner may write.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
#variable_conflict use_column
-- Example (outside a transaction block, or commit after it: a registration counts once committed):
--   LISTEN "taskpool_task_done_12345";            -- SELECT task_wait_channel()
--   SELECT * FROM register_task_waits(ARRAY[42]);  -- 42 | NULL | running | true
--   -- ... a notification on the channel, payload '42', once task 42 is completed, failed or cancelled
--   SELECT unregister_task_waits();
-- One row per task that exists, in id order. watched: the task is unfinished and its finish will
-- notify this session on task_wait_channel(). A task that is finished already is not entered
-- (read it now). An unfinished task with watched false was being changed by another transaction
-- at the moment (a claim, a heartbeat, a completion): its finish may not notify, so call again
-- shortly. Registering again is harmless. The waits end when the task finishes, at
-- unregister_task_waits, or when the session ends (its rows are pruned by the next call here).
DECLARE
    c_finished constant text[] := ARRAY['completed', 'failed', 'cancelled'];
    v_ids      bigint[];
    v_flagged  bigint[];
    v_shared   bigint[];
BEGIN
    IF register_task_waits.task_ids IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'task_ids must be an array of task ids, not NULL';
    END IF;
    IF cardinality(register_task_waits.task_ids) > 10000 THEN
        RAISE EXCEPTION USING ERRCODE = '54000',
            MESSAGE = format('task_ids has %s ids; at most 10000 go in one call', cardinality(register_task_waits.task_ids));
    END IF;

    IF register_task_waits.descendants THEN
        -- A follow-up is always younger than its parent (c.id > p.id): the walk ends.
        WITH RECURSIVE chain AS (
            SELECT t.id FROM worker_tasks t WHERE t.id = ANY (register_task_waits.task_ids)
            UNION
            SELECT c.id FROM worker_tasks c JOIN chain p ON c.parent_id = p.id WHERE c.id > p.id
        )
        SELECT array_agg(chain.id) INTO v_ids FROM chain;
        v_ids := coalesce(v_ids, '{}');
    ELSE
        v_ids := register_task_waits.task_ids;
    END IF;

    -- The waits of sessions that ended (a waiter killed before it unregistered).
    DELETE FROM task_result_waits w
    WHERE NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = w.backend_pid);

    INSERT INTO task_result_waits (task_id, backend_pid)
    SELECT t.id, pg_backend_pid()
    FROM worker_tasks t
    WHERE t.id = ANY (v_ids) AND NOT (t.status = ANY (c_finished))
    ON CONFLICT DO NOTHING;

    -- The finish of a task must not slip between this transaction's look at it and its commit:
    -- each unfinished task is locked until the commit, so a completion waits for it and then sees
    -- the registration (its trigger reads task_result_waits after). SKIP LOCKED, never a wait:
    -- a waiter must not deadlock with a worker's batch completion; a task skipped is reported
    -- unwatched. The first waiter of a task marks it waited (the trigger's WHEN tests that), the
    -- others share the lock.
    WITH flagged AS (
        UPDATE worker_tasks t
        SET waited = true
        WHERE t.id IN (SELECT l.id FROM worker_tasks l
                       WHERE l.id = ANY (v_ids) AND NOT (l.status = ANY (c_finished)) AND l.waited IS NOT TRUE
                       ORDER BY l.id
                       FOR NO KEY UPDATE SKIP LOCKED)
        RETURNING t.id
    )
    SELECT array_agg(flagged.id) INTO v_flagged FROM flagged;

    SELECT array_agg(l.id) INTO v_shared
    FROM (SELECT s.id FROM worker_tasks s
          WHERE s.id = ANY (v_ids) AND NOT (s.status = ANY (c_finished)) AND s.waited
          ORDER BY s.id
          FOR SHARE SKIP LOCKED) AS l;

    RETURN QUERY
    SELECT t.id, t.parent_id, t.status,
           NOT (t.status = ANY (c_finished))
           AND (t.id = ANY (coalesce(v_flagged, '{}')) OR t.id = ANY (coalesce(v_shared, '{}')))
    FROM worker_tasks t
    WHERE t.id = ANY (v_ids)
    ORDER BY t.id;
END;
$$;

REVOKE ALL ON FUNCTION register_task_waits(bigint[], boolean) FROM PUBLIC;

COMMIT;
