-- Deploy taskpool:worker_capacity to pg
-- requires: v_worker_capacity

BEGIN;
SET client_min_messages = 'warning';

-- worker_capacity
-- One role's capacity as JSON, in the shape an autoscaler reads (pending_tasks, active_workers, workers_needed).
CREATE FUNCTION worker_capacity(role text)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT worker_capacity('product_resync');
--   -- {"role": "product_resync", "pending_tasks": 500, "ready_tasks": 120, "active_workers": 3,
--   --  "tasks_per_worker_hour": 50.0,
--   --  "workers_needed": {"for_1_hour": 10, "for_4_hours": 3, "for_8_hours": 2}}
-- NULLs mean what they mean in v_worker_capacity (unknown throughput).
DECLARE
    v_capacity jsonb;
BEGIN
    SELECT jsonb_build_object(
               'role', c.role,
               'pending_tasks', c.pending_tasks,
               'ready_tasks', c.ready_tasks,
               'active_workers', c.active_workers,
               'tasks_per_worker_hour', c.tasks_per_worker_hour,
               'workers_needed', jsonb_build_object(
                   'for_1_hour', c.workers_needed_for_1_hour,
                   'for_4_hours', c.workers_needed_for_4_hours,
                   'for_8_hours', c.workers_needed_for_8_hours))
    INTO v_capacity
    FROM v_worker_capacity c
    WHERE c.role = worker_capacity.role;
    IF v_capacity IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', worker_capacity.role),
            HINT = 'Known roles: ' || (SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r) || '.';
    END IF;
    RETURN v_capacity;
END;
$$;

REVOKE ALL ON FUNCTION worker_capacity(text) FROM PUBLIC;

COMMIT;
