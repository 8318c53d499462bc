-- Deploy taskpool:_enqueue to pg
-- requires: task_spec
-- requires: _raise_task_spec_problem
-- requires: _task_headers_problem
-- requires: _dedupe_period_start
-- requires: task_spec_hash

BEGIN;
SET client_min_messages = 'warning';

-- _enqueue
-- The one enqueue path: checks every spec, then inserts them all, or raises on the first bad one
-- and writes nothing. enqueue_specs (typed batches), enqueue_task (one task with a dedupe key, or
-- refused; its usual call is the lean path below, written out in its body) and _enqueue_specs
-- (JSON specs: enqueue_tasks, follow-ups, chains, schedules) are calls of it.
-- label names a refused spec in the error (tasks[3]: ...; NULL, no prefix); the tasks get
-- parent_id, the task whose completion enqueues them; given is the JSON the specs were read
-- from, if any, so that an error quotes a value as it was written.
-- A dedupe key holds while its task is active; with a dedupe_window it holds for the window's
-- period, finished tasks included (worker_tasks.dedupe_window). dedupe_by_content makes the key
-- task_spec_hash(role, dispensary_id, payload).
CREATE FUNCTION _enqueue(specs task_spec[], label text, parent_id bigint, given jsonb DEFAULT NULL)
-- An array, not a set: enqueue_task's call of one spec is then a plain expression, which costs
-- no statement of its own.
RETURNS worker_tasks[]
LANGUAGE plpgsql
AS $$
DECLARE
    v_now       timestamptz;
    v_count     integer := cardinality(_enqueue.specs);
    v_uses      record;
    v_spec      task_spec;
    v_role      task_roles;
    v_store     dispensaries;
    v_problem   text;
    v_bad_idx   bigint;
    v_max_bytes integer;
    v_todo      task_spec[];
    v_task      worker_tasks;
    v_tasks     worker_tasks[];
    v_new_ids   bigint[];
    v_ids       bigint[];
    v_inserted  bigint[];
    v_done_keys text[];
BEGIN
    IF v_count IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004',
            MESSAGE = format('%s must be an array of task specs, not NULL', coalesce(_enqueue.label, 'tasks'));
    END IF;
    IF v_count > 10000 THEN
        RAISE EXCEPTION USING ERRCODE = '54000',
            MESSAGE = format('%s has %s tasks; at most 10000 go in one call', coalesce(_enqueue.label, 'tasks'), v_count);
    END IF;

    v_spec := _enqueue.specs[array_lower(_enqueue.specs, 1)];
    IF v_count = 1 AND v_spec.dedupe_key IS NULL AND v_spec.dedupe_window IS NULL
       AND v_spec.dedupe_by_content IS NOT TRUE THEN
        -- One task without a dedupe key (a follow-up, a batch of one) takes statements of its own:
        -- the same checks, without the set-wide passes and joins that cost more than the insert.
        -- Its store is locked first, as below. enqueue_task writes this path out in its own body.
        SELECT r.* INTO v_role FROM task_roles r WHERE r.role = v_spec.role;
        IF v_spec.dispensary_id IS NOT NULL THEN
            SELECT d.* INTO v_store FROM dispensaries d WHERE d.id = v_spec.dispensary_id FOR KEY SHARE;
        END IF;
        -- As in enqueue_task: without platform, headers and backoffs, their checks get constant
        -- NULLs, which the planner drops from the expression that each transaction sets up anew.
        IF num_nonnulls(v_spec.platform, v_spec.headers, v_spec.backoff_base, v_spec.backoff_cap) = 0 THEN
            v_problem := _task_spec_problem(
                ROW(v_spec.role, v_spec.payload, v_spec.dispensary_id, v_spec.priority, v_spec.scheduled_for,
                    NULL, v_spec.max_retries, NULL, NULL, NULL, NULL, NULL, NULL)::task_spec,
                octet_length(v_spec.payload::text), v_role, v_store.id IS NOT NULL);
        ELSE
            v_problem := _task_spec_problem(v_spec, octet_length(v_spec.payload::text), v_role, v_store.id IS NOT NULL);
        END IF;
        IF v_problem IS NULL THEN
            INSERT INTO worker_tasks (role, dispensary_id, platform, priority, scheduled_for, payload,
                                      max_retries, headers, parent_id, backoff_base, backoff_cap)
            VALUES (v_spec.role, v_spec.dispensary_id, coalesce(v_spec.platform, v_store.platform),
                    coalesce(v_spec.priority, 0), coalesce(v_spec.scheduled_for, taskpool_now()),
                    coalesce(nullif(v_spec.payload, 'null'), '{}'), coalesce(v_spec.max_retries, v_role.max_retries),
                    nullif(nullif(v_spec.headers, 'null'), '{}'), _enqueue.parent_id,
                    v_spec.backoff_base, v_spec.backoff_cap)
            RETURNING * INTO v_task;
            RETURN ARRAY[v_task];
        END IF;
        v_bad_idx := 1;
        v_max_bytes := v_role.max_payload_bytes;
    ELSE
        v_now := taskpool_now();
        -- What the batch needs: a plain pass, cheaper than the joins of the checks, so that a task
        -- without a store or a dedupe key skips the statements made for them.
        SELECT coalesce(bool_or(s.dispensary_id IS NOT NULL), false) AS stores,
               coalesce(bool_or(s.dedupe_key IS NOT NULL OR s.dedupe_by_content), false) AS keyed,
               coalesce(bool_or(s.dedupe_window IS NOT NULL), false) AS windowed,
               coalesce(bool_or(s.dedupe_by_content), false) AS by_content
        INTO v_uses
        FROM unnest(_enqueue.specs) AS s;

        -- The stores the specs name are locked (as the foreign key check would) before they are
        -- checked, so that one deleted meanwhile is reported as missing, not as a foreign key
        -- violation at insert; a deletion under way finishes first. Ids in order, as every enqueuer.
        IF v_uses.stores THEN
            PERFORM
            FROM dispensaries d
            WHERE d.id IN (SELECT s.dispensary_id FROM unnest(_enqueue.specs) AS s)
            ORDER BY d.id
            FOR KEY SHARE OF d;
        END IF;

        -- Every spec is checked before anything is written; the first failing check of the first bad
        -- spec is raised.
        SELECT s.idx, r.max_payload_bytes, problem.problem
        INTO v_bad_idx, v_max_bytes, v_problem
        FROM (SELECT unnest(_enqueue.specs) AS spec, generate_subscripts(_enqueue.specs, 1) AS idx) AS s
        -- OFFSET 0: the payload is turned into text once per spec, not once per use.
        CROSS JOIN LATERAL (SELECT octet_length((s.spec).payload::text) AS bytes OFFSET 0) AS payload
        LEFT JOIN task_roles r ON r.role = (s.spec).role
        LEFT JOIN dispensaries d ON d.id = (s.spec).dispensary_id
        CROSS JOIN LATERAL (SELECT _task_spec_problem(s.spec, payload.bytes, r, d.id IS NOT NULL) AS problem) AS problem
        WHERE problem.problem IS NOT NULL
        ORDER BY s.idx
        LIMIT 1;
    END IF;

    IF v_problem IS NOT NULL THEN
        PERFORM _raise_task_spec_problem(
            v_problem,
            coalesce(_enqueue.given -> (v_bad_idx::integer - 1),
                     -- backoffs in seconds, as JSON specs give them
                     to_jsonb(_enqueue.specs[v_bad_idx])
                     || jsonb_build_object('backoff_base', trim_scale(extract(epoch FROM (_enqueue.specs[v_bad_idx]).backoff_base)),
                                           'backoff_cap', trim_scale(extract(epoch FROM (_enqueue.specs[v_bad_idx]).backoff_cap)))),
            _enqueue.label, v_bad_idx, v_max_bytes);
    END IF;

    IF NOT v_uses.keyed THEN
        -- Without dedupe keys every spec is a new task: one insert, its rows returned as made.
        WITH made AS (
        INSERT INTO worker_tasks (role, dispensary_id, platform, priority, scheduled_for, payload,
                                  max_retries, headers, parent_id, backoff_base, backoff_cap)
        SELECT s.role, s.dispensary_id, coalesce(s.platform, d.platform), coalesce(s.priority, 0),
               coalesce(s.scheduled_for, v_now), coalesce(nullif(s.payload, 'null'), '{}'),
               coalesce(s.max_retries, r.max_retries),
               -- no headers: NULL, not an empty object
               nullif(nullif(s.headers, 'null'), '{}'),
               _enqueue.parent_id, s.backoff_base, s.backoff_cap
        FROM unnest(_enqueue.specs) WITH ORDINALITY AS s
        JOIN task_roles r ON r.role = s.role
        LEFT JOIN dispensaries d ON d.id = s.dispensary_id
        ORDER BY s.ordinality
        RETURNING *
        )
        SELECT array_agg(made::worker_tasks ORDER BY made.id) INTO v_tasks FROM made;
        RETURN coalesce(v_tasks, '{}');
    END IF;

    -- From here on a spec's key is its dedupe_key, whether given or made of its content.
    v_todo := _enqueue.specs;
    v_ids := '{}';
    IF v_uses.by_content THEN
        SELECT array_agg(ROW(s.role, s.payload, s.dispensary_id, s.priority, s.scheduled_for,
                             CASE WHEN s.dedupe_by_content
                                  THEN task_spec_hash(s.role, s.dispensary_id, s.payload)
                                  ELSE s.dedupe_key END,
                             s.max_retries, s.platform, s.headers, s.backoff_base, s.backoff_cap,
                             s.dedupe_window, false)::task_spec ORDER BY s.ordinality)
        INTO v_todo
        FROM unnest(_enqueue.specs) WITH ORDINALITY AS s;
    END IF;

    -- A spec whose dedupe key has an active task, or (with a window) a task of the same window
    -- created in the same period, yields that task instead of a new one: the active one when
    -- there are both. The lookup is a second statement (so it sees a conflicting task committed
    -- during the insert); should an active task finish in between, the spec goes round once more
    -- and is inserted, unless that task holds the period.
    --
    -- An insert waits for a concurrent one of the same dedupe key to end. Rows go in in dedupe
    -- key order, so that two batches sharing keys wait on each other in one direction and never
    -- deadlock; their ids are drawn beforehand in spec order, which stays the claim order.
    --
    -- Of the two inserts below, alike but for ON CONFLICT, a batch with a window takes the
    -- first: its ON CONFLICT names no index, as a row may meet either
    -- worker_tasks_one_active_per_dedupe_key_idx or worker_tasks_one_per_dedupe_period_idx (a
    -- rival for the primary key cannot exist: ids come from the sequence). Naming none makes
    -- every row probe the primary key as well, which cost a batch without a window some 10 % of
    -- its rate: those take the second, whose ON CONFLICT names the active-key index as ever.
    FOR v_pass IN 1..3 LOOP
        SELECT array_agg(nextval(pg_get_serial_sequence('worker_tasks', 'id')))
        INTO v_new_ids
        FROM generate_series(1, cardinality(v_todo));
        IF v_uses.windowed THEN
            WITH inserted AS (
                INSERT INTO worker_tasks (id, role, dispensary_id, platform, priority, scheduled_for, payload,
                                          dedupe_key, dedupe_window, max_retries, headers, parent_id,
                                          backoff_base, backoff_cap)
                OVERRIDING SYSTEM VALUE
                SELECT v_new_ids[s.ordinality], s.role, s.dispensary_id, coalesce(s.platform, d.platform),
                       coalesce(s.priority, 0), coalesce(s.scheduled_for, v_now),
                       coalesce(nullif(s.payload, 'null'), '{}'), s.dedupe_key, s.dedupe_window,
                       coalesce(s.max_retries, r.max_retries), nullif(nullif(s.headers, 'null'), '{}'),
                       _enqueue.parent_id, s.backoff_base, s.backoff_cap
                FROM unnest(v_todo) WITH ORDINALITY AS s
                JOIN task_roles r ON r.role = s.role
                LEFT JOIN dispensaries d ON d.id = s.dispensary_id
                ORDER BY s.dedupe_key COLLATE "C", s.ordinality
                ON CONFLICT DO NOTHING
                RETURNING id, dedupe_key
            )
            SELECT coalesce(array_agg(i.id), '{}'), coalesce(array_agg(i.dedupe_key) FILTER (WHERE i.dedupe_key IS NOT NULL), '{}')
            INTO v_inserted, v_done_keys
            FROM inserted i;
        ELSE
            WITH inserted AS (
                INSERT INTO worker_tasks (id, role, dispensary_id, platform, priority, scheduled_for, payload,
                                          dedupe_key, max_retries, headers, parent_id, backoff_base, backoff_cap)
                OVERRIDING SYSTEM VALUE
                SELECT v_new_ids[s.ordinality], s.role, s.dispensary_id, coalesce(s.platform, d.platform),
                       coalesce(s.priority, 0), coalesce(s.scheduled_for, v_now),
                       coalesce(nullif(s.payload, 'null'), '{}'), s.dedupe_key,
                       coalesce(s.max_retries, r.max_retries), nullif(nullif(s.headers, 'null'), '{}'),
                       _enqueue.parent_id, s.backoff_base, s.backoff_cap
                FROM unnest(v_todo) WITH ORDINALITY AS s
                JOIN task_roles r ON r.role = s.role
                LEFT JOIN dispensaries d ON d.id = s.dispensary_id
                ORDER BY s.dedupe_key COLLATE "C", s.ordinality
                ON CONFLICT (dedupe_key) WHERE status IN ('pending', 'claimed', 'running') AND dedupe_key IS NOT NULL
                DO NOTHING
                RETURNING id, dedupe_key
            )
            SELECT coalesce(array_agg(i.id), '{}'), coalesce(array_agg(i.dedupe_key) FILTER (WHERE i.dedupe_key IS NOT NULL), '{}')
            INTO v_inserted, v_done_keys
            FROM inserted i;
        END IF;
        v_ids := v_ids || v_inserted;

        -- The key's active task, else its task of the period: a probe of each unique index.
        WITH wanted AS (
            SELECT DISTINCT s.dedupe_key, s.dedupe_window
            FROM unnest(v_todo) AS s
            WHERE NOT (s.dedupe_key = ANY (v_done_keys))
        ), existing AS (
            SELECT DISTINCT ON (found.dedupe_key) found.id, found.dedupe_key
            FROM (SELECT t.id, t.dedupe_key, 1 AS rank
                  FROM wanted w
                  JOIN worker_tasks t ON t.dedupe_key = w.dedupe_key
                  WHERE t.status IN ('pending', 'claimed', 'running')
                  UNION ALL
                  SELECT t.id, t.dedupe_key, 2
                  FROM wanted w
                  JOIN worker_tasks t ON t.dedupe_key = w.dedupe_key AND t.dedupe_window = w.dedupe_window
                  WHERE _dedupe_period_start(t.created_at, t.dedupe_window)
                        = _dedupe_period_start(v_now, w.dedupe_window)) AS found
            ORDER BY found.dedupe_key, found.rank
        )
        SELECT v_ids || coalesce(array_agg(e.id), '{}'), v_done_keys || coalesce(array_agg(e.dedupe_key), '{}')
        INTO v_ids, v_done_keys
        FROM existing e;

        SELECT array_agg(v_todo[i] ORDER BY i) INTO v_todo
        FROM generate_subscripts(v_todo, 1) AS i
        WHERE NOT ((v_todo[i]).dedupe_key = ANY (v_done_keys));
        EXIT WHEN v_todo IS NULL;
    END LOOP;

    SELECT array_agg(t ORDER BY t.id) INTO v_tasks FROM worker_tasks t WHERE t.id = ANY (v_ids);
    RETURN coalesce(v_tasks, '{}');
END;
$$;

REVOKE ALL ON FUNCTION _enqueue(task_spec[], text, bigint, jsonb) FROM PUBLIC;

COMMIT;
