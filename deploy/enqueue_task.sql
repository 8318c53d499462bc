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
DECLARE
    v_role    task_roles;
    v_store   dispensaries;
    v_bytes   integer;
    v_problem text;
    v_task    worker_tasks;
BEGIN
    -- The usual call, one task without a dedupe key, is _enqueue's lean form written out here:
    -- the call of _enqueue (a second plpgsql function, the spec's array and composite, the task's
    -- array back) cost about 6 % of an enqueue per transaction (issue 27). The same checks, by
    -- _task_spec_problem; sql_tests/enqueue_fast_path compares the two paths.
    IF enqueue_task.dedupe_key IS NULL AND enqueue_task.dedupe_window IS NULL
       AND enqueue_task.dedupe_by_content IS NOT TRUE THEN
        SELECT r.* INTO v_role FROM task_roles r WHERE r.role = enqueue_task.role;
        IF enqueue_task.dispensary_id IS NOT NULL THEN
            SELECT d.* INTO v_store FROM dispensaries d WHERE d.id = enqueue_task.dispensary_id FOR KEY SHARE;
        END IF;
        v_bytes := octet_length(enqueue_task.payload::text);
        -- plpgsql sets up an expression anew in each transaction, the inlined checks included,
        -- and that costs more than running them. Without platform, headers and backoffs, the
        -- spec gives their checks constant NULLs, which the planner drops from the expression
        -- (each passes NULL): the task pays for the checks it can fail.
        IF num_nonnulls(enqueue_task.platform, enqueue_task.headers, enqueue_task.backoff_base,
                        enqueue_task.backoff_cap) = 0 THEN
            v_problem := _task_spec_problem(
                ROW(enqueue_task.role, enqueue_task.payload, enqueue_task.dispensary_id, enqueue_task.priority,
                    enqueue_task.scheduled_for, NULL, enqueue_task.max_retries, NULL, NULL, NULL, NULL, NULL,
                    NULL)::task_spec,
                v_bytes, v_role, v_store.id IS NOT NULL);
        ELSE
            v_problem := _task_spec_problem(
                ROW(enqueue_task.role, enqueue_task.payload, enqueue_task.dispensary_id, enqueue_task.priority,
                    enqueue_task.scheduled_for, NULL, enqueue_task.max_retries, enqueue_task.platform,
                    enqueue_task.headers, enqueue_task.backoff_base, enqueue_task.backoff_cap, NULL, NULL)::task_spec,
                v_bytes, v_role, v_store.id IS NOT NULL);
        END IF;
        IF v_problem IS NULL THEN
            INSERT INTO worker_tasks (role, dispensary_id, platform, priority, scheduled_for, payload,
                                      max_retries, headers, backoff_base, backoff_cap)
            VALUES (enqueue_task.role, enqueue_task.dispensary_id, coalesce(enqueue_task.platform, v_store.platform),
                    coalesce(enqueue_task.priority, 0), coalesce(enqueue_task.scheduled_for, taskpool_now()),
                    coalesce(nullif(enqueue_task.payload, 'null'), '{}'),
                    coalesce(enqueue_task.max_retries, v_role.max_retries),
                    nullif(nullif(enqueue_task.headers, 'null'), '{}'), enqueue_task.backoff_base,
                    enqueue_task.backoff_cap)
            RETURNING * INTO v_task;
            RETURN v_task;
        END IF;
    END IF;
    -- A dedupe key, or a refused task: _enqueue, which words the refusal as for every spec (no
    -- tasks[N] prefix for one spec).
    RETURN (_enqueue(ARRAY[ROW(enqueue_task.role, enqueue_task.payload, enqueue_task.dispensary_id,
                               enqueue_task.priority, enqueue_task.scheduled_for, enqueue_task.dedupe_key,
                               enqueue_task.max_retries, enqueue_task.platform, enqueue_task.headers,
                               enqueue_task.backoff_base, enqueue_task.backoff_cap, enqueue_task.dedupe_window,
                               enqueue_task.dedupe_by_content)::task_spec],
                     NULL, NULL))[1];
END;
$$;

COMMIT;
