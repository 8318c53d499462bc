-- Revert taskpool:tg_worker_tasks__publish_changes from pg: back to the v0.8.0 body, which reads worker_tasks alone

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__publish_changes
-- The stream of task changes: every enqueue, status change, cancel request and deletion of a task,
-- whoever makes it (a worker's call, an operator's, the tick, a bulk action, a direct UPDATE), is
-- published with NOTIFY on the channel taskpool_task_changes, at the commit of its transaction.
--
-- One message per statement and per (role, from, to) group, its ids chunked so that a message
-- stays far under NOTIFY's 8000-byte limit (300 ids of at most 20 characters): a batch of 1000
-- completions sends 4 messages, not 1000. The payload, documented in docs/sql-reference.md:
--   {"event": "status", "role": "product_resync", "from": "running", "to": "completed", "ids": [41, 42]}
-- event is enqueued (from null), status, cancel_requested (from = to) or deleted (to null).
-- Only while a follower's lease runs (task_change_followers, whose notes say why): otherwise a
-- statement pays one read of that small table and its transition tables, and sends nothing.
--
-- Statement triggers with transition tables rather than row triggers: a row trigger is a PL/pgSQL
-- call per row and a WHEN clause parsed at every statement (see _600_after_status_change's notes).
-- These cost one call per statement, and nothing is sent for an UPDATE that changes no status (a
-- heartbeat). Not SECURITY DEFINER, and no SET clause (a GUC save and restore at every call):
-- only the owner and the owner's SECURITY DEFINER functions write worker_tasks, so it runs as the
-- owner already, as the BEFORE trigger does.
CREATE OR REPLACE FUNCTION tg_worker_tasks__publish_changes()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM task_change_followers f WHERE f.expires_at > taskpool_now()) THEN
        RETURN NULL;
    END IF;

    IF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('taskpool_task_changes', json_build_object(
                    'event', c.event, 'role', c.role, 'from', c.from_status, 'to', c.to_status,
                    'ids', json_agg(c.id ORDER BY c.id))::text)
        FROM (SELECT n.id, n.role, o.status AS from_status, n.status AS to_status,
                     CASE WHEN o.status IS DISTINCT FROM n.status THEN 'status' ELSE 'cancel_requested' END AS event,
                     (row_number() OVER (PARTITION BY n.role, o.status, n.status ORDER BY n.id) - 1) / 300 AS chunk
              FROM old_tasks o
              JOIN new_tasks n ON n.id = o.id
              WHERE o.status IS DISTINCT FROM n.status
                 OR (o.cancel_requested_at IS NULL AND n.cancel_requested_at IS NOT NULL)) c
        GROUP BY c.event, c.role, c.from_status, c.to_status, c.chunk;
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM pg_notify('taskpool_task_changes', json_build_object(
                    'event', 'enqueued', 'role', c.role, 'from', NULL, 'to', c.status,
                    'ids', json_agg(c.id ORDER BY c.id))::text)
        FROM (SELECT n.id, n.role, n.status,
                     (row_number() OVER (PARTITION BY n.role, n.status ORDER BY n.id) - 1) / 300 AS chunk
              FROM new_tasks n) c
        GROUP BY c.role, c.status, c.chunk;
    ELSE
        PERFORM pg_notify('taskpool_task_changes', json_build_object(
                    'event', 'deleted', 'role', c.role, 'from', c.status, 'to', NULL,
                    'ids', json_agg(c.id ORDER BY c.id))::text)
        FROM (SELECT o.id, o.role, o.status,
                     (row_number() OVER (PARTITION BY o.role, o.status ORDER BY o.id) - 1) / 300 AS chunk
              FROM old_tasks o) c
        GROUP BY c.role, c.status, c.chunk;
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_worker_tasks__publish_changes() FROM PUBLIC;

COMMENT ON FUNCTION tg_worker_tasks__publish_changes() IS
    'Publishes each statement''s task changes on the channel taskpool_task_changes, one JSON message per (event, role, from, to) and per 300 ids.';

-- A trigger with transition tables has one event: three triggers, one function.

COMMIT;
