-- Deploy taskpool:task_chain to pg
-- requires: worker_tasks_parent_id

BEGIN;
SET client_min_messages = 'warning';

-- task_chain
-- A task's chain: the tasks whose completions led to it (its parent, that one's parent, ...) and
-- every follow-up below it, each with its place and status.
CREATE FUNCTION task_chain(task_id bigint)
RETURNS TABLE (id bigint, parent_id bigint, depth integer, role text, status text, dispensary_id integer,
               created_at timestamptz, completed_at timestamptz, error_message text)
LANGUAGE sql
STABLE
AS $$
    -- Example:
    --   SELECT id, depth, role, status FROM task_chain(42);
    -- depth: 0 for the task itself, -1 for its parent, -2 for the parent's parent, ...; 1 for its
    -- follow-ups, 2 for theirs, ... Rows go from the oldest ancestor down, then the task and its
    -- descendants depth first (a follow-up right under its parent), in id order among siblings.
    -- No rows when the task does not exist. A chain is over when every task from depth 0 down is
    -- completed, failed or cancelled: a follow-up is enqueued in the transaction that completes
    -- its parent, so a completed task's follow-ups exist as soon as its completion is seen.
    WITH RECURSIVE up AS (
        SELECT t.id, t.parent_id, 0 AS depth
        FROM worker_tasks t
        WHERE t.id = task_chain.task_id
        UNION ALL
        -- a parent is always older than its follow-up (p.id < up.id): the walk ends
        SELECT p.id, p.parent_id, up.depth - 1
        FROM worker_tasks p
        JOIN up ON p.id = up.parent_id AND p.id < up.id
    ), down AS (
        SELECT t.id, 0 AS depth, ARRAY[t.id] AS path
        FROM worker_tasks t
        WHERE t.id = task_chain.task_id
        UNION ALL
        SELECT c.id, down.depth + 1, down.path || c.id
        FROM worker_tasks c
        JOIN down ON c.parent_id = down.id AND c.id > down.id
    ), members AS (
        SELECT up.id, up.depth, NULL::bigint[] AS path FROM up WHERE up.depth < 0
        UNION ALL
        SELECT down.id, down.depth, down.path FROM down
    )
    SELECT t.id, t.parent_id, m.depth, t.role, t.status, t.dispensary_id, t.created_at, t.completed_at,
           t.error_message
    FROM members m
    JOIN worker_tasks t ON t.id = m.id
    ORDER BY m.depth >= 0, CASE WHEN m.depth < 0 THEN m.depth END, m.path;
$$;

REVOKE ALL ON FUNCTION task_chain(bigint) FROM PUBLIC;

COMMIT;
