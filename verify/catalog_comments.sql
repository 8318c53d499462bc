-- Verify taskpool:catalog_comments on pg

BEGIN;

-- Raises naming each routine whose comment is missing or has no example (a missing routine raises too).
DO $$
DECLARE
    v_missing text;
BEGIN
    SELECT string_agg(r.signature, ', ') INTO v_missing
    FROM unnest(ARRAY[
        'acquire_platform_request(text)',
        'cancel_task(bigint)',
        'claim_and_start_tasks(text, text, integer)',
        'claim_task(text, text)',
        'claim_tasks(text, text, integer)',
        'complete_task(bigint, text, integer, uuid, jsonb, jsonb)',
        'complete_tasks(text, jsonb)',
        'count_prunable_tasks(interval)',
        'deregister_worker(text)',
        'enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb)',
        'enqueue_tasks(jsonb)',
        'fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb)',
        'heartbeat_task(bigint, text, integer, uuid)',
        'heartbeat_tasks(text, bigint[], integer[], uuid[])',
        'heartbeat_worker(text)',
        'mark_worker_waiting(text)',
        'mark_worker_waiting(text, text)',
        'prune_tasks(interval, integer)',
        'prune_tasks_in_batches(interval, integer, integer, bigint)',
        'record_platform_result(text, boolean, text)',
        'recover_stale_tasks(integer)',
        'register_task_waits(bigint[], boolean)',
        'register_worker(text, text, text, integer)',
        'register_worker(text, text[], text, integer)',
        'release_task(bigint, text, integer, uuid)',
        'retry_task(bigint)',
        'set_taskpool_clock_offset(interval)',
        'snooze_task(bigint, text, integer, uuid, timestamptz)',
        'start_task(bigint, text, integer, uuid)',
        'task_chain(bigint)',
        'task_wait_channel(integer)',
        'taskpool_health(interval, interval)',
        'taskpool_now()',
        'taskpool_schema_version()',
        'tick_schedules()',
        'trigger_schedule(text)',
        'unregister_task_waits(bigint[])',
        'update_schedule(text, boolean, integer, integer)',
        'worker_capacity(text)',
        'worker_wake_channel(text)'
    ]) AS r(signature)
    WHERE coalesce(obj_description(r.signature::regprocedure, 'pg_proc'), '') NOT LIKE '%Example:%';
    IF v_missing IS NOT NULL THEN
        RAISE EXCEPTION 'no COMMENT with an example on %', v_missing;
    END IF;
    IF coalesce(col_description('worker_tasks'::regclass,
                               (SELECT a.attnum FROM pg_attribute a
                                WHERE a.attrelid = 'worker_tasks'::regclass AND a.attname = 'status')), '')
       NOT LIKE 'What the task is doing.%task_status_transitions%' THEN
        RAISE EXCEPTION 'worker_tasks.status lacks its comment: what each state means, and where the transitions are';
    END IF;
END $$;

ROLLBACK;
