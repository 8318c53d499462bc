-- Revert taskpool:_enqueue_specs from pg
-- Back to v0.8.0's _enqueue_specs, which checked JSON specs itself (the body of deploy/_enqueue_specs@v0.8.0.sql).

BEGIN;
SET client_min_messages = 'warning';

-- _enqueue_specs
-- Validates a JSON array of task specs, then inserts them all, or raises on the first bad one and writes nothing.
-- Specs take a "headers" field (worker_tasks.headers, checked by _task_headers_problem); the
-- tasks get parent_id, the task whose completion enqueues them (complete_task's follow_ups and
-- the chains of task_role_chains pass it; enqueue_task and enqueue_tasks pass none).
-- A dedupe key holds while its task is active; with a "dedupe_window" it holds for the window's
-- period, finished tasks included (worker_tasks.dedupe_window). "dedupe_by_content": true makes
-- the key task_spec_hash(role, dispensary_id, payload).
CREATE OR REPLACE FUNCTION _enqueue_specs(specs jsonb, label text, parent_id bigint DEFAULT NULL)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
AS $$
DECLARE
    c_fields constant text[] := ARRAY['role', 'payload', 'dispensary_id', 'platform', 'priority',
                                      'scheduled_for', 'dedupe_key', 'max_retries', 'headers',
                                      'backoff_base', 'backoff_cap', 'dedupe_window', 'dedupe_by_content'];
    c_max_backoff constant integer := extract(epoch FROM interval '1 year')::integer;
    c_dedupe_fields constant text[] := ARRAY['dedupe_window', 'dedupe_by_content'];
    c_max_window  constant interval := interval '366 days';
    -- What a worker can load (pyworker: Python's json, which refuses integers of more than 4300
    -- digits and recurses once per level): nesting up to 100 levels, numbers of up to 1000 digits
    -- before the decimal point. The walks only run on payloads long enough to break a bound:
    -- nesting deeper than 100 takes more than 200 characters of JSON, a number of 1001 digits
    -- more than 1000.
    c_max_depth   constant integer := 100;
    c_max_digits  constant integer := 1000;
    v_too_deep    constant jsonpath := format('strict $.**{%s} ? (@.type() == "object" || @.type() == "array")',
                                              c_max_depth)::jsonpath;
    v_too_big     constant jsonpath := 'strict $.** ? (@ >= $limit || @ <= -$limit)';
    v_number_vars constant jsonb := jsonb_build_object('limit', ('1e' || c_max_digits)::numeric);
    v_now      timestamptz := taskpool_now();
    v_bad      record;
    v_number   text;
    v_new_ids  bigint[];
    v_where    text;
    v_ids      bigint[] := '{}';
    v_todo     jsonb := _enqueue_specs.specs;
    v_inserted bigint[];
    v_done_keys text[];
    v_windowed boolean := false;
BEGIN
    IF jsonb_typeof(_enqueue_specs.specs) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('%s must be a JSON array of task objects, not %s',
                             coalesce(_enqueue_specs.label, 'tasks'),
                             coalesce(jsonb_typeof(_enqueue_specs.specs), 'NULL'));
    END IF;
    IF jsonb_array_length(_enqueue_specs.specs) > 10000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '54000',
            MESSAGE = format('%s has %s tasks; at most 10000 go in one call',
                             coalesce(_enqueue_specs.label, 'tasks'), jsonb_array_length(_enqueue_specs.specs));
    END IF;

    -- The stores the specs name are locked (as the foreign key check would) before they are
    -- checked, so that one deleted meanwhile is reported as missing, not as a foreign key
    -- violation at insert; a deletion under way finishes first. Ids in order, as every enqueuer.
    PERFORM
    FROM dispensaries d
    WHERE d.id IN (SELECT _jsonb_integer(s.spec -> 'dispensary_id')
                   FROM jsonb_array_elements(_enqueue_specs.specs) AS s(spec)
                   WHERE jsonb_typeof(s.spec) = 'object' AND s.spec ? 'dispensary_id')
    ORDER BY d.id
    FOR KEY SHARE OF d;

    -- Every spec is checked before anything is written. The first failing check of the first
    -- bad spec is named here; its message is built below, for that one spec only.
    SELECT checked.idx, checked.spec, checked.problem, checked.max_payload_bytes INTO v_bad
    FROM (
        SELECT s.idx, s.spec, r.max_payload_bytes,
            CASE
                WHEN jsonb_typeof(s.spec) IS DISTINCT FROM 'object' THEN 'not_object'
                WHEN s.spec - c_fields <> '{}'::jsonb THEN 'unknown_field'
                WHEN jsonb_typeof(s.spec -> 'role') IS DISTINCT FROM 'string' THEN 'no_role'
                WHEN r.role IS NULL THEN 'unknown_role'
                WHEN jsonb_typeof(nullif(s.spec -> 'payload', 'null')) <> 'object' THEN 'payload_not_object'
                WHEN payload.bytes > r.max_payload_bytes THEN 'payload_too_large'
                WHEN payload.bytes > 200 AND jsonb_path_exists(s.spec -> 'payload', v_too_deep) THEN 'payload_too_deep'
                WHEN payload.bytes > 1000 AND jsonb_path_exists(s.spec -> 'payload', v_too_big, v_number_vars)
                     THEN 'payload_number_too_big'
                WHEN nullif(s.spec -> 'dispensary_id', 'null') IS NOT NULL
                     AND _jsonb_integer(s.spec -> 'dispensary_id') IS NULL THEN 'dispensary_not_integer'
                WHEN nullif(s.spec -> 'dispensary_id', 'null') IS NOT NULL AND d.id IS NULL THEN 'unknown_dispensary'
                WHEN r.requires_store AND nullif(s.spec -> 'dispensary_id', 'null') IS NULL THEN 'dispensary_required'
                WHEN jsonb_typeof(nullif(s.spec -> 'priority', 'null')) <> 'number' THEN 'priority_not_integer'
                WHEN _jsonb_number(s.spec -> 'priority') NOT BETWEEN -100 AND 100 THEN 'priority_out_of_range'
                WHEN nullif(s.spec -> 'priority', 'null') IS NOT NULL
                     AND _jsonb_integer(s.spec -> 'priority') IS NULL THEN 'priority_not_integer'
                WHEN jsonb_typeof(nullif(s.spec -> 'max_retries', 'null')) <> 'number' THEN 'max_retries_not_integer'
                WHEN _jsonb_number(s.spec -> 'max_retries') NOT BETWEEN 0 AND 1000 THEN 'max_retries_out_of_range'
                WHEN nullif(s.spec -> 'max_retries', 'null') IS NOT NULL
                     AND _jsonb_integer(s.spec -> 'max_retries') IS NULL THEN 'max_retries_not_integer'
                WHEN nullif(s.spec -> 'scheduled_for', 'null') IS NOT NULL
                     AND _jsonb_timestamptz(s.spec -> 'scheduled_for') IS NULL THEN 'scheduled_for_invalid'
                WHEN jsonb_typeof(nullif(s.spec -> 'dedupe_key', 'null')) <> 'string'
                     OR length(s.spec ->> 'dedupe_key') NOT BETWEEN 1 AND 255 THEN 'dedupe_key_invalid'
                WHEN jsonb_typeof(nullif(s.spec -> 'platform', 'null')) <> 'string'
                     OR length(s.spec ->> 'platform') NOT BETWEEN 1 AND 100 THEN 'platform_invalid'
                WHEN s.spec ? 'headers' AND _task_headers_problem(s.spec -> 'headers') IS NOT NULL THEN 'headers_invalid'
                WHEN jsonb_typeof(nullif(s.spec -> 'backoff_base', 'null')) <> 'number'
                     OR NOT _jsonb_number(s.spec -> 'backoff_base') > 0
                     OR _jsonb_number(s.spec -> 'backoff_base') > c_max_backoff THEN 'backoff_base_invalid'
                WHEN jsonb_typeof(nullif(s.spec -> 'backoff_cap', 'null')) <> 'number'
                     OR NOT _jsonb_number(s.spec -> 'backoff_cap') > 0
                     OR _jsonb_number(s.spec -> 'backoff_cap') > c_max_backoff THEN 'backoff_cap_invalid'
                WHEN _jsonb_number(s.spec -> 'backoff_cap') < _jsonb_number(s.spec -> 'backoff_base')
                     THEN 'backoff_cap_below_base'
                -- Last, behind one test, so that a spec without them pays for that test alone.
                WHEN s.spec ?| c_dedupe_fields THEN
                    CASE
                    WHEN jsonb_typeof(nullif(s.spec -> 'dedupe_by_content', 'null')) <> 'boolean'
                         THEN 'dedupe_by_content_invalid'
                    WHEN s.spec -> 'dedupe_by_content' = 'true' AND nullif(s.spec -> 'dedupe_key', 'null') IS NOT NULL
                         THEN 'dedupe_key_and_content'
                    WHEN nullif(s.spec -> 'dedupe_window', 'null') IS NOT NULL
                         AND _jsonb_interval(s.spec -> 'dedupe_window') IS NULL THEN 'dedupe_window_invalid'
                    WHEN extract(epoch FROM _jsonb_interval(nullif(s.spec -> 'dedupe_window', 'null')))
                         NOT BETWEEN 1 AND extract(epoch FROM c_max_window) THEN 'dedupe_window_out_of_range'
                    WHEN nullif(s.spec -> 'dedupe_window', 'null') IS NOT NULL
                         AND nullif(s.spec -> 'dedupe_key', 'null') IS NULL
                         AND s.spec -> 'dedupe_by_content' IS DISTINCT FROM 'true' THEN 'dedupe_window_without_key'
                    END
            END AS problem
        FROM jsonb_array_elements(_enqueue_specs.specs) WITH ORDINALITY AS s(spec, idx)
        -- OFFSET 0: the payload is turned into text once per spec, not once per use.
        CROSS JOIN LATERAL (SELECT octet_length((s.spec -> 'payload')::text) AS bytes OFFSET 0) AS payload
        LEFT JOIN task_roles r ON r.role = s.spec ->> 'role' AND jsonb_typeof(s.spec) = 'object'
        LEFT JOIN dispensaries d ON d.id = _jsonb_integer(s.spec -> 'dispensary_id') AND jsonb_typeof(s.spec) = 'object'
    ) AS checked
    WHERE checked.problem IS NOT NULL
    ORDER BY checked.idx
    LIMIT 1;

    IF FOUND THEN
        v_where := CASE WHEN _enqueue_specs.label IS NULL THEN ''
                        ELSE format('%s[%s]: ', _enqueue_specs.label, v_bad.idx - 1) END;
        CASE v_bad.problem
        WHEN 'not_object' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('a task must be a JSON object, not %s', jsonb_typeof(v_bad.spec));
        WHEN 'unknown_field' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || (SELECT CASE WHEN count(*) = 1 THEN 'unknown field ' ELSE 'unknown fields ' END
                                                 || string_agg(quote_literal(k), ', ' ORDER BY k)
                                          FROM jsonb_object_keys(v_bad.spec - c_fields) AS k),
                HINT = 'Allowed fields: ' || array_to_string(c_fields, ', ') || '.';
        WHEN 'no_role' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || 'role is required and must be a string',
                HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
        WHEN 'unknown_role' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('unknown role %L', v_bad.spec ->> 'role'),
                HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
        WHEN 'payload_not_object' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('payload must be a JSON object, not %s', jsonb_typeof(v_bad.spec -> 'payload'));
        WHEN 'payload_too_large' THEN
            RAISE EXCEPTION USING ERRCODE = '54000',
                MESSAGE = v_where || format('payload is %s bytes; role %s allows at most %s',
                    octet_length((v_bad.spec -> 'payload')::text), v_bad.spec ->> 'role', v_bad.max_payload_bytes),
                HINT = 'Store large inputs elsewhere and pass a reference, or raise task_roles.max_payload_bytes.';
        WHEN 'payload_too_deep' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('payload is nested more than %s levels deep', c_max_depth),
                HINT = 'Workers load payloads nested up to 100 levels: flatten it, or store it elsewhere and pass a reference.';
        WHEN 'payload_number_too_big' THEN
            v_number := jsonb_path_query_first(v_bad.spec -> 'payload', v_too_big, v_number_vars)::text;
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('payload holds the number %s (%s digits); numbers may have at most %s digits before the decimal point',
                    left(v_number, 20) || CASE WHEN length(v_number) > 20 THEN '...' ELSE '' END,
                    length(regexp_replace(split_part(v_number, '.', 1), '[^0-9]', '', 'g')), c_max_digits),
                HINT = 'Pass a bigger number as a string.';
        WHEN 'dispensary_not_integer' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('dispensary_id must be an integer, not %s', v_bad.spec -> 'dispensary_id');
        WHEN 'unknown_dispensary' THEN
            RAISE EXCEPTION USING ERRCODE = '23503',
                MESSAGE = v_where || format('dispensary %s does not exist', v_bad.spec -> 'dispensary_id');
        WHEN 'dispensary_required' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('role %s needs a dispensary_id', v_bad.spec ->> 'role'),
                HINT = 'Its tasks act on one store (task_roles.requires_store).';
        WHEN 'priority_not_integer' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('priority must be an integer, not %s', v_bad.spec -> 'priority');
        WHEN 'priority_out_of_range' THEN
            RAISE EXCEPTION USING ERRCODE = '22003',
                MESSAGE = v_where || format('priority %s is out of range', v_bad.spec -> 'priority'),
                HINT = 'Priorities go from -100 to 100; higher runs first.';
        WHEN 'max_retries_not_integer' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('max_retries must be an integer, not %s', v_bad.spec -> 'max_retries');
        WHEN 'max_retries_out_of_range' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('max_retries %s is out of range', v_bad.spec -> 'max_retries'),
                HINT = 'max_retries goes from 0 to 1000.';
        WHEN 'scheduled_for_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22007',
                MESSAGE = v_where || format('scheduled_for %s is not a timestamp', v_bad.spec -> 'scheduled_for'),
                HINT = 'Use ISO 8601, e.g. "2026-01-31T12:00:00Z".';
        WHEN 'dedupe_key_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('dedupe_key must be a string of 1 to 255 characters, not %s',
                                            left((v_bad.spec -> 'dedupe_key')::text, 60));
        WHEN 'dedupe_by_content_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('dedupe_by_content must be true or false, not %s',
                                            left((v_bad.spec -> 'dedupe_by_content')::text, 60));
        WHEN 'dedupe_key_and_content' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || 'give a dedupe_key or dedupe_by_content, not both',
                HINT = 'dedupe_by_content makes the key task_spec_hash(role, dispensary_id, payload).';
        WHEN 'dedupe_window_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('dedupe_window must be an interval or a number of seconds, not %s',
                                            left((v_bad.spec -> 'dedupe_window')::text, 60)),
                HINT = 'For example "1 hour", "PT30M" or 3600.';
        WHEN 'dedupe_window_out_of_range' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('dedupe_window %s is out of range',
                                            left((v_bad.spec -> 'dedupe_window')::text, 60)),
                HINT = format('A dedupe window goes from 1 second to %s.', c_max_window);
        WHEN 'dedupe_window_without_key' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || 'dedupe_window needs a dedupe_key or dedupe_by_content',
                HINT = 'The window says how long a key holds; without a key there is nothing to hold.';
        WHEN 'platform_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('platform must be a string of 1 to 100 characters, not %s',
                                            left((v_bad.spec -> 'platform')::text, 60));
        WHEN 'headers_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || _task_headers_problem(v_bad.spec -> 'headers'),
                HINT = 'headers is a JSON object of at most 32 strings (e.g. {"traceparent": "00-..."}), 8192 bytes in all.';
        WHEN 'backoff_base_invalid', 'backoff_cap_invalid' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('%s must be a number of seconds, more than 0 and at most %s (a year), not %s',
                    CASE v_bad.problem WHEN 'backoff_base_invalid' THEN 'backoff_base' ELSE 'backoff_cap' END,
                    c_max_backoff,
                    left((v_bad.spec -> CASE v_bad.problem WHEN 'backoff_base_invalid' THEN 'backoff_base'
                                                          ELSE 'backoff_cap' END)::text, 60)),
                HINT = 'Omit it to take the role''s (task_roles.backoff_base, backoff_cap).';
        WHEN 'backoff_cap_below_base' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('backoff_cap %s is below backoff_base %s',
                                            v_bad.spec -> 'backoff_cap', v_bad.spec -> 'backoff_base'),
                HINT = 'The cap is the longest delay between retries: at least the first one.';
        END CASE;
    END IF;

    -- From here on a spec's key is its dedupe_key, whether given or made of its content, and its
    -- window a valid interval. Only batches that use either pay for the rewrite.
    IF jsonb_path_exists(_enqueue_specs.specs, '$[*] ? (exists(@.dedupe_window) || exists(@.dedupe_by_content))') THEN
        SELECT jsonb_agg(
                   (s.spec - 'dedupe_by_content' - 'dedupe_window')
                   || CASE WHEN s.spec -> 'dedupe_by_content' = 'true'
                           THEN jsonb_build_object('dedupe_key',
                                    task_spec_hash(s.spec ->> 'role', _jsonb_integer(s.spec -> 'dispensary_id'),
                                                   s.spec -> 'payload'))
                           ELSE '{}' END
                   || CASE WHEN nullif(s.spec -> 'dedupe_window', 'null') IS NOT NULL
                           THEN jsonb_build_object('dedupe_window', _jsonb_interval(s.spec -> 'dedupe_window'))
                           ELSE '{}' END
                   ORDER BY s.idx)
        INTO v_todo
        FROM jsonb_array_elements(_enqueue_specs.specs) WITH ORDINALITY AS s(spec, idx);
        v_windowed := EXISTS (SELECT FROM jsonb_array_elements(v_todo) AS s(spec) WHERE s.spec ? 'dedupe_window');
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
        FROM generate_series(1, jsonb_array_length(v_todo));
        IF v_windowed THEN
            WITH inserted AS (
                INSERT INTO worker_tasks (id, role, dispensary_id, platform, priority, scheduled_for, payload,
                                          dedupe_key, dedupe_window, max_retries, headers, parent_id,
                                          backoff_base, backoff_cap)
                OVERRIDING SYSTEM VALUE
                SELECT v_new_ids[s.idx],
                       s.spec ->> 'role',
                       _jsonb_integer(s.spec -> 'dispensary_id'),
                       coalesce(s.spec ->> 'platform', d.platform),
                       coalesce(_jsonb_integer(s.spec -> 'priority'), 0),
                       coalesce(_jsonb_timestamptz(s.spec -> 'scheduled_for'), v_now),
                       coalesce(nullif(s.spec -> 'payload', 'null'), '{}'),
                       s.spec ->> 'dedupe_key',
                       (s.spec ->> 'dedupe_window')::interval,
                       coalesce(_jsonb_integer(s.spec -> 'max_retries'), r.max_retries),
                       -- no headers: NULL, not an empty object
                       nullif(nullif(s.spec -> 'headers', 'null'), '{}'),
                       _enqueue_specs.parent_id,
                       make_interval(secs => _jsonb_number(s.spec -> 'backoff_base')),
                       make_interval(secs => _jsonb_number(s.spec -> 'backoff_cap'))
                FROM jsonb_array_elements(v_todo) WITH ORDINALITY AS s(spec, idx)
                JOIN task_roles r ON r.role = s.spec ->> 'role'
                LEFT JOIN dispensaries d ON d.id = _jsonb_integer(s.spec -> 'dispensary_id')
                ORDER BY s.spec ->> 'dedupe_key' COLLATE "C", s.idx
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
                SELECT v_new_ids[s.idx],
                       s.spec ->> 'role',
                       _jsonb_integer(s.spec -> 'dispensary_id'),
                       coalesce(s.spec ->> 'platform', d.platform),
                       coalesce(_jsonb_integer(s.spec -> 'priority'), 0),
                       coalesce(_jsonb_timestamptz(s.spec -> 'scheduled_for'), v_now),
                       coalesce(nullif(s.spec -> 'payload', 'null'), '{}'),
                       s.spec ->> 'dedupe_key',
                       coalesce(_jsonb_integer(s.spec -> 'max_retries'), r.max_retries),
                       -- no headers: NULL, not an empty object
                       nullif(nullif(s.spec -> 'headers', 'null'), '{}'),
                       _enqueue_specs.parent_id,
                       make_interval(secs => _jsonb_number(s.spec -> 'backoff_base')),
                       make_interval(secs => _jsonb_number(s.spec -> 'backoff_cap'))
                FROM jsonb_array_elements(v_todo) WITH ORDINALITY AS s(spec, idx)
                JOIN task_roles r ON r.role = s.spec ->> 'role'
                LEFT JOIN dispensaries d ON d.id = _jsonb_integer(s.spec -> 'dispensary_id')
                ORDER BY s.spec ->> 'dedupe_key' COLLATE "C", s.idx
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
            SELECT DISTINCT s.spec ->> 'dedupe_key' AS dedupe_key, (s.spec ->> 'dedupe_window')::interval AS dedupe_window
            FROM jsonb_array_elements(v_todo) AS s(spec)
            WHERE NOT (s.spec ->> 'dedupe_key' = ANY (v_done_keys))
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

        SELECT jsonb_agg(s.spec) INTO v_todo
        FROM jsonb_array_elements(v_todo) AS s(spec)
        WHERE s.spec ->> 'dedupe_key' IS NOT NULL AND NOT (s.spec ->> 'dedupe_key' = ANY (v_done_keys));
        EXIT WHEN v_todo IS NULL;
    END LOOP;

    RETURN QUERY SELECT t.* FROM worker_tasks t WHERE t.id = ANY (v_ids) ORDER BY t.id;
END;
$$;

COMMIT;
