-- Revert taskpool:enqueue_task from pg
-- Back to v0.8.0's enqueue_task, which checked JSON specs itself (the body of deploy/enqueue_task@v0.8.0.sql).

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
-- The arguments are named as worker_tasks' columns; in its statements a bare name is the column.
#variable_conflict use_column
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
    v_role     task_roles%ROWTYPE;
    v_payload  jsonb := coalesce(nullif(enqueue_task.payload, 'null'), '{}');
    v_bytes    integer := coalesce(octet_length(enqueue_task.payload::text), 0);
    v_platform text := enqueue_task.platform;
    v_headers  jsonb := nullif(nullif(enqueue_task.headers, 'null'), '{}');
    v_task     worker_tasks;
BEGIN
    -- One task does not need _enqueue_specs' set-wide checks, which cost several times the
    -- insert: here each argument is tested as a plain value, and the row goes in with one INSERT.
    -- The tests only decide whether this path may insert. Input that fails any of them goes to
    -- _enqueue_specs, which refuses it with the error and the message it always had.
    SELECT r.* INTO v_role FROM task_roles r WHERE r.role = enqueue_task.role;
    IF FOUND
       AND jsonb_typeof(v_payload) = 'object'
       AND v_bytes <= v_role.max_payload_bytes
       -- _enqueue_specs' bounds on what a worker can load, behind the same length tests.
       AND NOT (v_bytes > 200 AND jsonb_path_exists(v_payload,
                'strict $.**{100} ? (@.type() == "object" || @.type() == "array")'))
       AND NOT (v_bytes > 1000 AND jsonb_path_exists(v_payload,
                'strict $.** ? (@ >= $limit || @ <= -$limit)', jsonb_build_object('limit', '1e1000'::numeric)))
       AND (enqueue_task.dispensary_id IS NOT NULL OR NOT v_role.requires_store)
       AND coalesce(enqueue_task.priority, 0) BETWEEN -100 AND 100
       AND coalesce(enqueue_task.max_retries, 0) BETWEEN 0 AND 1000
       -- Times that _enqueue_specs may refuse once written as JSON (infinities, years beyond
       -- 1000..9999 in some zone) are left to it.
       AND (enqueue_task.scheduled_for IS NULL
            OR enqueue_task.scheduled_for BETWEEN '1000-01-02 00:00:00+00' AND '9999-12-30 00:00:00+00')
       AND (enqueue_task.dedupe_key IS NULL OR length(enqueue_task.dedupe_key) BETWEEN 1 AND 255)
       AND (enqueue_task.platform IS NULL OR length(enqueue_task.platform) BETWEEN 1 AND 100)
       AND (enqueue_task.headers IS NULL OR _task_headers_problem(enqueue_task.headers) IS NULL)
       AND (enqueue_task.backoff_base IS NULL
            OR enqueue_task.backoff_base > interval '0' AND enqueue_task.backoff_base <= interval '1 year')
       AND (enqueue_task.backoff_cap IS NULL
            OR enqueue_task.backoff_cap > interval '0' AND enqueue_task.backoff_cap <= interval '1 year')
       AND NOT coalesce(enqueue_task.backoff_cap < enqueue_task.backoff_base, false)
       AND enqueue_task.dedupe_window IS NULL
       AND NOT coalesce(enqueue_task.dedupe_by_content, false)
    THEN
        -- The store is locked before the insert, as _enqueue_specs does, so that one deleted
        -- meanwhile is reported as missing rather than as a foreign key violation.
        IF enqueue_task.dispensary_id IS NOT NULL THEN
            SELECT coalesce(v_platform, d.platform) INTO v_platform
            FROM dispensaries d
            WHERE d.id = enqueue_task.dispensary_id
            FOR KEY SHARE;
        END IF;
        IF enqueue_task.dispensary_id IS NULL OR FOUND THEN
            IF enqueue_task.dedupe_key IS NULL THEN
                INSERT INTO worker_tasks (role, dispensary_id, platform, priority, scheduled_for, payload,
                                          max_retries, headers, backoff_base, backoff_cap)
                VALUES (enqueue_task.role, enqueue_task.dispensary_id, v_platform,
                        coalesce(enqueue_task.priority, 0), coalesce(enqueue_task.scheduled_for, taskpool_now()),
                        v_payload, coalesce(enqueue_task.max_retries, v_role.max_retries), v_headers,
                        enqueue_task.backoff_base, enqueue_task.backoff_cap)
                RETURNING * INTO v_task;
                RETURN v_task;
            END IF;
            -- As in _enqueue_specs: the active task of the key is looked up by a second
            -- statement, which sees one committed during the insert; should that task finish in
            -- between, the insert is tried again.
            FOR v_pass IN 1..3 LOOP
                INSERT INTO worker_tasks (role, dispensary_id, platform, priority, scheduled_for, payload,
                                          dedupe_key, max_retries, headers, backoff_base, backoff_cap)
                VALUES (enqueue_task.role, enqueue_task.dispensary_id, v_platform,
                        coalesce(enqueue_task.priority, 0), coalesce(enqueue_task.scheduled_for, taskpool_now()),
                        v_payload, enqueue_task.dedupe_key, coalesce(enqueue_task.max_retries, v_role.max_retries),
                        v_headers, enqueue_task.backoff_base, enqueue_task.backoff_cap)
                ON CONFLICT (dedupe_key) WHERE status IN ('pending', 'claimed', 'running') AND dedupe_key IS NOT NULL
                DO NOTHING
                RETURNING * INTO v_task;
                IF FOUND THEN
                    RETURN v_task;
                END IF;
                SELECT t.* INTO v_task
                FROM worker_tasks t
                WHERE t.dedupe_key = enqueue_task.dedupe_key AND t.status IN ('pending', 'claimed', 'running');
                IF FOUND THEN
                    RETURN v_task;
                END IF;
            END LOOP;
        END IF;
    END IF;

    SELECT t.* INTO v_task
    FROM _enqueue_specs(
        (SELECT jsonb_build_array(jsonb_object_agg(f.name, f.value))
         FROM (VALUES ('role',          to_jsonb(enqueue_task.role)),
                      ('payload',       enqueue_task.payload),
                      ('dispensary_id', to_jsonb(enqueue_task.dispensary_id)),
                      ('priority',      to_jsonb(enqueue_task.priority)),
                      ('scheduled_for', to_jsonb(enqueue_task.scheduled_for)),
                      ('dedupe_key',    to_jsonb(enqueue_task.dedupe_key)),
                      ('max_retries',   to_jsonb(enqueue_task.max_retries)),
                      ('platform',      to_jsonb(enqueue_task.platform)),
                      ('headers',       enqueue_task.headers),
                      -- in seconds, as specs give them
                      ('backoff_base',  to_jsonb(trim_scale(extract(epoch FROM enqueue_task.backoff_base)))),
                      ('backoff_cap',   to_jsonb(trim_scale(extract(epoch FROM enqueue_task.backoff_cap)))),
                      ('dedupe_window', to_jsonb(enqueue_task.dedupe_window)),
                      ('dedupe_by_content', to_jsonb(enqueue_task.dedupe_by_content))) AS f(name, value)
         WHERE f.value IS NOT NULL),
        NULL) AS t;
    RETURN v_task;
END;
$$;

COMMIT;
