-- Revert taskpool:catalog_comments from pg

BEGIN;
SET client_min_messages = 'warning';

COMMENT ON COLUMN worker_tasks.status IS
    'pending: ready once scheduled_for has passed; goes to claimed, or cancelled. '
    'claimed: a worker took it (claim_task); goes to running, completed, failed, pending, cancelled. '
    'running: the worker started it (start_task); goes to completed, failed, pending, cancelled. '
    'completed, failed, cancelled: finished; failed and cancelled go back to pending by retry_task. '
    'Allowed changes are the rows of task_status_transitions.';

-- The comments their own changes set come back; the others go.
COMMENT ON FUNCTION acquire_platform_request(text) IS NULL;
COMMENT ON FUNCTION cancel_task(bigint) IS NULL;
COMMENT ON FUNCTION claim_and_start_tasks(text, text, integer) IS NULL;
COMMENT ON FUNCTION claim_task(text, text) IS NULL;
COMMENT ON FUNCTION claim_tasks(text, text, integer) IS NULL;
COMMENT ON FUNCTION complete_task(bigint, text, integer, uuid, jsonb, jsonb) IS NULL;
COMMENT ON FUNCTION complete_tasks(text, jsonb) IS NULL;
COMMENT ON FUNCTION count_prunable_tasks(interval) IS NULL;
COMMENT ON FUNCTION deregister_worker(text) IS NULL;
COMMENT ON FUNCTION enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb) IS NULL;
COMMENT ON FUNCTION enqueue_tasks(jsonb) IS NULL;
COMMENT ON FUNCTION fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb) IS 
    'Records a failed attempt: back to pending after a backoff while retries remain, else failed.';
COMMENT ON FUNCTION heartbeat_task(bigint, text, integer, uuid) IS NULL;
COMMENT ON FUNCTION heartbeat_tasks(text, bigint[], integer[], uuid[]) IS NULL;
COMMENT ON FUNCTION heartbeat_worker(text) IS NULL;
COMMENT ON FUNCTION mark_worker_waiting(text) IS NULL;
COMMENT ON FUNCTION mark_worker_waiting(text, text) IS NULL;
COMMENT ON FUNCTION prune_tasks(interval, integer) IS NULL;
COMMENT ON PROCEDURE prune_tasks_in_batches(interval, integer, integer, bigint) IS NULL;
COMMENT ON FUNCTION record_platform_result(text, boolean, text) IS NULL;
COMMENT ON FUNCTION recover_stale_tasks(integer) IS NULL;
COMMENT ON FUNCTION register_task_waits(bigint[], boolean) IS NULL;
COMMENT ON FUNCTION register_worker(text, text, text, integer) IS NULL;
COMMENT ON FUNCTION register_worker(text, text[], text, integer) IS NULL;
COMMENT ON FUNCTION release_task(bigint, text, integer, uuid) IS NULL;
COMMENT ON FUNCTION retry_task(bigint) IS NULL;
COMMENT ON FUNCTION set_taskpool_clock_offset(interval) IS NULL;
COMMENT ON FUNCTION snooze_task(bigint, text, integer, uuid, timestamptz) IS NULL;
COMMENT ON FUNCTION start_task(bigint, text, integer, uuid) IS NULL;
COMMENT ON FUNCTION task_chain(bigint) IS NULL;
COMMENT ON FUNCTION task_wait_channel(integer) IS NULL;
COMMENT ON FUNCTION taskpool_health(interval, interval) IS 
    'The checks of what needs a person (stuck_tasks, schedule_tick, schedule_errors, open_circuits, xmin_horizon), one row each: status ok or attention, detail, and action (NULL when ok).';
COMMENT ON FUNCTION taskpool_now() IS 
    'Database time for taskpool: now() plus the offset set by set_taskpool_clock_offset() (none by default).';
COMMENT ON FUNCTION taskpool_schema_version() IS NULL;
COMMENT ON FUNCTION tick_schedules() IS NULL;
COMMENT ON FUNCTION trigger_schedule(text) IS NULL;
COMMENT ON FUNCTION unregister_task_waits(bigint[]) IS NULL;
COMMENT ON FUNCTION update_schedule(text, boolean, integer, integer) IS NULL;
COMMENT ON FUNCTION worker_capacity(text) IS NULL;
COMMENT ON FUNCTION worker_wake_channel(text) IS NULL;

COMMIT;
