-- Deploy taskpool:enqueue_task to pg
-- requires: enqueue_task@v0.8.0
-- requires: _enqueue

BEGIN;
SET client_min_messages = 'warning';

-- enqueue_task
-- Adds one task to the pool and returns it; with a dedupe_key, returns the task that already holds it.
CREATE OR REPLACE FUNCTION enqueue_task(
    role          text,
    payload       jsonb       DEFAULT '{}',
    dispensary_id integer     DEFAULT NULL,
    priority      integer     DEFAULT 0,
    scheduled_for timestamptz DEFAULT NULL,
    dedupe_key    text        DEFAULT NULL,
    max_retries   integer     DEFAULT NULL,
    platform      text        DEFAULT NULL,
    headers       jsonb       DEFAULT NULL,
    backoff_base  interval    DEFAULT NULL,
    backoff_cap   interval    DEFAULT NULL,
    dedupe_window interval    DEFAULT NULL,
    dedupe_by_content boolean DEFAULT false)
RETURNS worker_tasks
-- plpgsql, not sql: its call of _enqueue is a plain expression, prepared once a session.
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT id, status FROM enqueue_task('product_resync', '{"reason": "manual"}',
--                                       dispensary_id := 42, priority := 10);
-- Omitted arguments take the role's defaults (max_retries) and the store's (platform);
-- scheduled_for defaults to now. Bad input raises, naming the value and what is allowed.
-- headers: string-to-string metadata carried to the worker (e.g. {"traceparent": "00-..."}),
-- checked by _task_headers_problem; none, or an empty object, is stored as NULL.
-- backoff_base, backoff_cap: the task's own retry backoff (more than 0, at most a year, the cap
-- not below the base); NULL: the role's.
-- dedupe_key holds while its task is active; with dedupe_window (1 second to 366 days) for the
-- window's period, finished tasks included (worker_tasks.dedupe_window). dedupe_by_content makes
-- the key task_spec_hash(role, dispensary_id, payload).
-- One spec of _enqueue, which holds every check: an error has no tasks[N] prefix.
BEGIN
    RETURN (_enqueue(ARRAY[ROW(enqueue_task.role, enqueue_task.payload, enqueue_task.dispensary_id,
                               enqueue_task.priority, enqueue_task.scheduled_for, enqueue_task.dedupe_key,
                               enqueue_task.max_retries, enqueue_task.platform, enqueue_task.headers,
                               enqueue_task.backoff_base, enqueue_task.backoff_cap, enqueue_task.dedupe_window,
                               enqueue_task.dedupe_by_content)::task_spec],
                     NULL, NULL))[1];
END;
$$;

COMMIT;
