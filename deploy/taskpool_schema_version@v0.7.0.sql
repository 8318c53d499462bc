-- Deploy taskpool:taskpool_schema_version to pg
-- requires: taskpool_schema_version@v0.5.0
-- requires: heartbeat_tasks
-- requires: _claim_tasks
-- requires: task_status_transition_allowed
-- requires: tg_worker_tasks__enforce_transition
-- requires: claim_and_start_tasks
-- requires: worker_tasks_one_active_per_store_not_null
-- requires: complete_tasks
-- requires: tg_worker_tasks__after_status_change
-- requires: enqueue_task
-- requires: tg_worker_tasks__notify_enqueued
-- requires: tg_task_wake_requests__wake_at_commit
-- requires: task_worker_roles
-- requires: task_worker_waits_per_role
-- requires: register_worker
-- requires: mark_worker_waiting
-- requires: v_worker_capacity
-- requires: v_workers
-- requires: worker_task_attempts_error_data
-- requires: fail_task
-- requires: worker_tasks_parent_id
-- requires: worker_tasks_headers
-- requires: _enqueue_specs
-- requires: enqueue_task_headers
-- requires: complete_task
-- requires: complete_tasks_follow_up_parents
-- requires: task_result_waits
-- requires: task_wait_channel
-- requires: register_task_waits
-- requires: after_status_change_parents_and_waiters
-- requires: task_chain
-- requires: catalog_comments

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_schema_version
-- The version of the SQL interface this database holds; workers check it at start-up.
CREATE OR REPLACE FUNCTION taskpool_schema_version()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- Example:
    --   SELECT taskpool_schema_version();   -- '0.6.0'
    -- 0.6.0: heartbeat_tasks (a worker's held tasks in one call, an answer each); the claim
    -- without a subtransaction or per-call planning; one BEFORE trigger on worker_tasks; workers
    -- that serve several roles (register_worker(worker_id, roles[], ...), mark_worker_waiting(worker_id, role));
    -- fail_task's error_data (a failed attempt's error as JSON); worker_tasks.parent_id (chains,
    -- task_chain()) and .headers; waiting for a task's end (register_task_waits, notified only
    -- when someone waits).
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
    SELECT '0.6.0'::text;
$$;

COMMIT;
