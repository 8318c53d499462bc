-- Revert taskpool:taskpool_schema_version from pg: back to 0.5.0
-- requires: taskpool_schema_version@v0.4.0
-- requires: fail_task
-- requires: add_store
-- requires: taskpool_health
-- requires: v_workers
-- requires: v_waiting_tasks
-- requires: prune_tasks_in_batches
-- requires: count_prunable_tasks
-- requires: generate_resync_plan

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_schema_version
-- The version of the SQL interface this database holds; workers check it at start-up.
CREATE OR REPLACE FUNCTION taskpool_schema_version()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- Example:
    --   SELECT taskpool_schema_version();   -- '0.5.0'
    -- 0.5.0: fail_task keeps the attempt's error_details (a traceback, bounded); add_store;
    -- taskpool_health() and v_workers (liveness); v_waiting_tasks; batched pruning
    -- (prune_tasks_in_batches, count_prunable_tasks); generate_resync_plan says what it skipped.
    -- 0.4.0: register_worker returns the role's settings (a worker needs nothing but its
    -- grants); wake-ups happen at commit; only an operator moves the clock
    -- (set_taskpool_clock_offset).
    -- 0.3.0: claim_and_start_tasks and complete_tasks, the worker's fast path; waiting workers
    -- (mark_worker_waiting) woken one per ready task on their worker_wake_channel.
    -- 0.2.0: schedules (tick_schedules, trigger_schedule, update_schedule, generate_resync_tasks)
    -- and capacity (v_worker_capacity, worker_capacity). Rework this change (sqitch rework)
    -- whenever a release adds or changes a function that pyworker calls, so that an older schema
    -- is named as such instead of failing mid-task.
    SELECT '0.5.0'::text;
$$;

COMMIT;
