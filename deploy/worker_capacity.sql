-- Deploy taskpool:worker_capacity to pg
-- requires: worker_capacity@v0.5.0
-- requires: v_worker_capacity_units

BEGIN;
SET client_min_messages = 'warning';

-- worker_capacity
-- One role's capacity as JSON, in the shape an autoscaler reads (pending_tasks, active_workers,
-- workers_needed), in worker processes, with the same figures in slots beside them.
CREATE OR REPLACE FUNCTION worker_capacity(role text)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT worker_capacity('product_resync');
--   -- {"role": "product_resync", "pending_tasks": 500, "ready_tasks": 120,
--   --  "active_workers": 3, "active_processes": 3, "active_slots": 60, "slots_per_process": 20.0,
--   --  "tasks_per_worker_hour": 50.0, "tasks_per_slot_hour": 50.0, "estimated_hours_to_drain": 0.17,
--   --  "workers_needed": {"for_1_hour": 1, "for_4_hours": 1, "for_8_hours": 1},
--   --  "processes_needed": {"for_1_hour": 1, "for_4_hours": 1, "for_8_hours": 1},
--   --  "slots_needed": {"for_1_hour": 10, "for_4_hours": 3, "for_8_hours": 2}}
-- The seed's keys are in processes: active_workers = active_processes, workers_needed =
-- processes_needed. tasks_per_worker_hour is a slot's rate (its old name; = tasks_per_slot_hour).
-- NULLs mean what they mean in v_worker_capacity (unknown throughput).
DECLARE
    v_capacity jsonb;
BEGIN
    SELECT jsonb_build_object(
               'role', c.role,
               'pending_tasks', c.pending_tasks,
               'ready_tasks', c.ready_tasks,
               'active_workers', c.active_processes,
               'active_processes', c.active_processes,
               'active_slots', c.active_slots,
               'slots_per_process', c.slots_per_process,
               'tasks_per_worker_hour', c.tasks_per_slot_hour,
               'tasks_per_slot_hour', c.tasks_per_slot_hour,
               'estimated_hours_to_drain', c.estimated_hours_to_drain,
               'workers_needed', jsonb_build_object(
                   'for_1_hour', c.processes_needed_for_1_hour,
                   'for_4_hours', c.processes_needed_for_4_hours,
                   'for_8_hours', c.processes_needed_for_8_hours),
               'processes_needed', jsonb_build_object(
                   'for_1_hour', c.processes_needed_for_1_hour,
                   'for_4_hours', c.processes_needed_for_4_hours,
                   'for_8_hours', c.processes_needed_for_8_hours),
               'slots_needed', jsonb_build_object(
                   'for_1_hour', c.slots_needed_for_1_hour,
                   'for_4_hours', c.slots_needed_for_4_hours,
                   'for_8_hours', c.slots_needed_for_8_hours))
    INTO v_capacity
    FROM v_worker_capacity c
    WHERE c.role = worker_capacity.role;
    IF v_capacity IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', worker_capacity.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    RETURN v_capacity;
END;
$$;

COMMENT ON FUNCTION worker_capacity(text) IS $$One role's capacity as JSON, in the shape an autoscaler reads (pending_tasks, active_workers, workers_needed), in worker processes, with the same figures in slots.
Example:
  SELECT worker_capacity('product_resync');
  -- {"role": "product_resync", "pending_tasks": 500, "ready_tasks": 120, "active_workers": 3,
  --  "active_processes": 3, "active_slots": 60, "slots_per_process": 20.0, "tasks_per_slot_hour": 50.0, ...
  --  "workers_needed": {"for_1_hour": 1, "for_4_hours": 1, "for_8_hours": 1},
  --  "processes_needed": {...the same...}, "slots_needed": {"for_1_hour": 10, "for_4_hours": 3, "for_8_hours": 2}}
A slot runs one task at a time; a worker process (pyworker --concurrency N) has N. active_workers and workers_needed are processes (the seed's keys); tasks_per_worker_hour is a slot's rate.$$;

COMMIT;
