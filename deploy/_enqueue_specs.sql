-- Deploy taskpool:_enqueue_specs to pg
-- requires: _enqueue_specs@v0.8.0
-- requires: _enqueue

BEGIN;
SET client_min_messages = 'warning';

-- _enqueue_specs
-- Enqueues a JSON array of task specs (enqueue_tasks, complete_task's follow-ups, chains,
-- schedules): reads them into task_spec[] and calls _enqueue, all or nothing. It checks only
-- what JSON can get wrong and a type cannot hold (a spec that is not an object, a field that is
-- not one of task_spec's, a value of the wrong JSON type or too big for its column); every other
-- check is _enqueue's. An error names the spec: label[0]: ... (label NULL, no prefix).
-- backoff_base and backoff_cap are seconds; dedupe_window an interval or seconds.
CREATE OR REPLACE FUNCTION _enqueue_specs(specs jsonb, label text, parent_id bigint DEFAULT NULL)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
AS $$
DECLARE
    -- Seconds beyond any a check will take; the check names them, the column cannot hold them.
    c_max_seconds constant numeric := 1e9;
    v_fields text[];
    v_read   record;
BEGIN
    IF jsonb_typeof(_enqueue_specs.specs) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('%s must be a JSON array of task objects, not %s',
                             coalesce(_enqueue_specs.label, 'tasks'),
                             coalesce(jsonb_typeof(_enqueue_specs.specs), 'NULL'));
    END IF;

    SELECT array_agg(a.attname::text ORDER BY a.attnum) INTO v_fields
    FROM pg_attribute a
    WHERE a.attrelid = 'task_spec'::regclass AND a.attnum > 0 AND NOT a.attisdropped;

    SELECT array_agg(c.spec ORDER BY c.idx) AS specs,
           min(c.idx) FILTER (WHERE c.problem IS NOT NULL) AS bad_idx,
           (array_agg(c.problem ORDER BY c.idx) FILTER (WHERE c.problem IS NOT NULL))[1] AS problem
    INTO v_read
    FROM (
        SELECT s.idx, checked.problem,
               CASE WHEN checked.problem IS NULL THEN
                   ROW(s.spec ->> 'role', s.spec -> 'payload', _jsonb_integer(s.spec -> 'dispensary_id'),
                       _jsonb_integer(s.spec -> 'priority'), _jsonb_timestamptz(s.spec -> 'scheduled_for'),
                       s.spec ->> 'dedupe_key', _jsonb_integer(s.spec -> 'max_retries'), s.spec ->> 'platform',
                       s.spec -> 'headers',
                       make_interval(secs => _jsonb_number(s.spec -> 'backoff_base')),
                       make_interval(secs => _jsonb_number(s.spec -> 'backoff_cap')),
                       _jsonb_interval(nullif(s.spec -> 'dedupe_window', 'null')),
                       (nullif(s.spec -> 'dedupe_by_content', 'null'))::boolean)::task_spec
               END AS spec
        FROM jsonb_array_elements(_enqueue_specs.specs) WITH ORDINALITY AS s(spec, idx)
        CROSS JOIN LATERAL (SELECT CASE
            WHEN jsonb_typeof(s.spec) <> 'object' THEN 'not_object'
            WHEN s.spec - v_fields <> '{}'::jsonb THEN 'unknown_field'
            WHEN jsonb_typeof(nullif(s.spec -> 'role', 'null')) <> 'string' THEN 'no_role'
            WHEN nullif(s.spec -> 'dispensary_id', 'null') IS NOT NULL
                 AND _jsonb_integer(s.spec -> 'dispensary_id') IS NULL THEN 'dispensary_not_integer'
            WHEN jsonb_typeof(nullif(s.spec -> 'priority', 'null')) <> 'number' THEN 'priority_not_integer'
            WHEN _jsonb_number(s.spec -> 'priority') NOT BETWEEN -2147483648 AND 2147483647 THEN 'priority_out_of_range'
            WHEN nullif(s.spec -> 'priority', 'null') IS NOT NULL
                 AND _jsonb_integer(s.spec -> 'priority') IS NULL THEN 'priority_not_integer'
            WHEN jsonb_typeof(nullif(s.spec -> 'max_retries', 'null')) <> 'number' THEN 'max_retries_not_integer'
            WHEN _jsonb_number(s.spec -> 'max_retries') NOT BETWEEN -2147483648 AND 2147483647 THEN 'max_retries_out_of_range'
            WHEN nullif(s.spec -> 'max_retries', 'null') IS NOT NULL
                 AND _jsonb_integer(s.spec -> 'max_retries') IS NULL THEN 'max_retries_not_integer'
            WHEN nullif(s.spec -> 'scheduled_for', 'null') IS NOT NULL
                 AND _jsonb_timestamptz(s.spec -> 'scheduled_for') IS NULL THEN 'scheduled_for_invalid'
            WHEN jsonb_typeof(nullif(s.spec -> 'dedupe_key', 'null')) <> 'string' THEN 'dedupe_key_invalid'
            WHEN jsonb_typeof(nullif(s.spec -> 'platform', 'null')) <> 'string' THEN 'platform_invalid'
            WHEN jsonb_typeof(nullif(s.spec -> 'backoff_base', 'null')) <> 'number'
                 OR abs(_jsonb_number(s.spec -> 'backoff_base')) > c_max_seconds THEN 'backoff_base_invalid'
            WHEN jsonb_typeof(nullif(s.spec -> 'backoff_cap', 'null')) <> 'number'
                 OR abs(_jsonb_number(s.spec -> 'backoff_cap')) > c_max_seconds THEN 'backoff_cap_invalid'
            WHEN jsonb_typeof(nullif(s.spec -> 'dedupe_by_content', 'null')) <> 'boolean' THEN 'dedupe_by_content_invalid'
            WHEN nullif(s.spec -> 'dedupe_window', 'null') IS NOT NULL
                 AND _jsonb_interval(s.spec -> 'dedupe_window') IS NULL THEN 'dedupe_window_invalid'
            END AS problem) AS checked
    ) AS c;

    IF v_read.bad_idx IS NOT NULL THEN
        PERFORM _raise_task_spec_problem(v_read.problem, _enqueue_specs.specs -> (v_read.bad_idx::integer - 1),
                                         _enqueue_specs.label, v_read.bad_idx);
    END IF;

    RETURN QUERY SELECT * FROM unnest(_enqueue(coalesce(v_read.specs, '{}'), _enqueue_specs.label,
                                               _enqueue_specs.parent_id, _enqueue_specs.specs));
END;
$$;

COMMIT;
