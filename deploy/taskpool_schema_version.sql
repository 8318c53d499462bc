-- Deploy taskpool:taskpool_schema_version to pg
-- requires: taskpool_schema_version@v0.8.0

-- The last change of the plan: whatever precedes it is deployed when it is. Each release reworks
-- it (sqitch rework taskpool_schema_version) with the version raised.

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_schema_version
-- The version of the SQL interface this database holds; workers check it at start-up.
CREATE OR REPLACE FUNCTION taskpool_schema_version()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- Example:
    --   SELECT taskpool_schema_version();   -- '0.9.0'
    -- The version is set by the last change of sqitch.plan, always this one, reworked once a
    -- release (tests/test_schema_version.py fails otherwise): a database deployed part way reports
    -- the version of before, and a worker that needs the whole plan refuses it.
    -- 0.9.0: one typed enqueue path (task_spec, enqueue_specs(task_spec[]); enqueue_task and
    -- the JSON specs call it); a history beside the hot queue (worker_task_history, partitioned by
    -- day and status, filled by move_tasks_to_history in the tick; worker_tasks_with_history;
    -- set_task_history; task_spec_runs; retention drops whole days); claims that take platform
    -- tokens (task_roles.claims_platform_token) and rotate between platforms (task_claim_turns),
    -- reserve_platform_request, platform_token_wait, v_platforms.tokens_now and next_token_at,
    -- v_waiting_tasks.rate_limit, acquire_platform_request's clock read after its lock;
    -- retention in rounds within a time budget (apply_retention(max_batches, max_seconds,
    -- count_backlog)), each policy's backlog and behind_since, retention in taskpool_metrics,
    -- a policy for platform_events.
    -- 0.8.0: complete_tasks(worker_id, task_ids[], attempts[], claim_tokens[], results[],
    -- follow_ups[]), the worker's form, which the JSON form calls; every function's live body (and
    -- view's definition) in the deploy file named after it; the six trigger functions that no
    -- trigger fired are dropped.
    -- 0.7.0: workers register their concurrency (register_worker(..., concurrency)); capacity in
    -- slots and in processes (v_worker_capacity, worker_capacity); unserved_roles() and its
    -- health check and metric; recover_stale_tasks_of_role (a worker recovers its role's stale
    -- tasks); pause_role and resume_role; clear errors on a database with no role; nothing of the
    -- schema executable by PUBLIC; v_xmin_horizon without any session's SQL; a cancel or a stale
    -- recovery notifies the worker that held the task (abort:<id> on its wake channel); a
    -- claim_token per claim, passed with the attempt by every worker call (start_task,
    -- heartbeat_task(s), complete_task(s), fail_task, snooze_task, release_task take it); and
    -- every change of the plan before this one.
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
    -- and capacity (v_worker_capacity, worker_capacity).
    SELECT '0.9.0'::text;
$$;

COMMIT;
