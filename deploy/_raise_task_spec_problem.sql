-- Deploy taskpool:_raise_task_spec_problem to pg
-- requires: task_spec

BEGIN;
SET client_min_messages = 'warning';

-- _raise_task_spec_problem
-- Raises the error of a refused task spec: one wording, SQLSTATE and hint per problem, whether
-- enqueue_specs found it in a typed spec or _enqueue_specs in a JSON one.
-- spec is the refused spec as JSON (a typed one as to_jsonb gives it, backoffs in seconds), so
-- that the message quotes the value as it was given; spec_index counts from 1 and is named from
-- 0 after the label (tasks[0]: ...); no label, no prefix (enqueue_task's one spec).
CREATE FUNCTION _raise_task_spec_problem(problem text, spec jsonb, label text, spec_index bigint,
                                         max_payload_bytes integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    c_max_depth  constant integer := 100;
    c_max_digits constant integer := 1000;
    c_max_backoff constant integer := extract(epoch FROM interval '1 year')::integer;
    c_max_window constant interval := interval '366 days';
    v_where  text := CASE WHEN label IS NULL THEN '' ELSE format('%s[%s]: ', label, spec_index - 1) END;
    v_fields text[];
    v_number text;
    v_backoff text;
BEGIN
    CASE problem
    WHEN 'not_object' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('a task must be a JSON object, not %s', jsonb_typeof(spec));
    WHEN 'unknown_field' THEN
        -- The fields a spec may carry are task_spec's.
        SELECT array_agg(a.attname::text ORDER BY a.attnum) INTO v_fields
        FROM pg_attribute a
        WHERE a.attrelid = 'task_spec'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || (SELECT CASE WHEN count(*) = 1 THEN 'unknown field ' ELSE 'unknown fields ' END
                                         || string_agg(quote_literal(k), ', ' ORDER BY k)
                                  FROM jsonb_object_keys(spec - v_fields) AS k),
            HINT = 'Allowed fields: ' || array_to_string(v_fields, ', ') || '.';
    WHEN 'no_role' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || 'role is required and must be a string',
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    WHEN 'unknown_role' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('unknown role %L', spec ->> 'role'),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    WHEN 'payload_not_object' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('payload must be a JSON object, not %s', jsonb_typeof(spec -> 'payload'));
    WHEN 'payload_too_large' THEN
        RAISE EXCEPTION USING ERRCODE = '54000',
            MESSAGE = v_where || format('payload is %s bytes; role %s allows at most %s',
                octet_length((spec -> 'payload')::text), spec ->> 'role', max_payload_bytes),
            HINT = 'Store large inputs elsewhere and pass a reference, or raise task_roles.max_payload_bytes.';
    WHEN 'payload_too_deep' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('payload is nested more than %s levels deep', c_max_depth),
            HINT = 'Workers load payloads nested up to 100 levels: flatten it, or store it elsewhere and pass a reference.';
    WHEN 'payload_number_too_big' THEN
        v_number := jsonb_path_query_first(spec -> 'payload', 'strict $.** ? (@ >= $limit || @ <= -$limit)',
                                           jsonb_build_object('limit', ('1e' || c_max_digits)::numeric))::text;
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('payload holds the number %s (%s digits); numbers may have at most %s digits before the decimal point',
                left(v_number, 20) || CASE WHEN length(v_number) > 20 THEN '...' ELSE '' END,
                length(regexp_replace(split_part(v_number, '.', 1), '[^0-9]', '', 'g')), c_max_digits),
            HINT = 'Pass a bigger number as a string.';
    WHEN 'dispensary_not_integer' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('dispensary_id must be an integer, not %s', spec -> 'dispensary_id');
    WHEN 'unknown_dispensary' THEN
        RAISE EXCEPTION USING ERRCODE = '23503',
            MESSAGE = v_where || format('dispensary %s does not exist', spec -> 'dispensary_id');
    WHEN 'dispensary_required' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('role %s needs a dispensary_id', spec ->> 'role'),
            HINT = 'Its tasks act on one store (task_roles.requires_store).';
    WHEN 'priority_not_integer' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('priority must be an integer, not %s', spec -> 'priority');
    WHEN 'priority_out_of_range' THEN
        RAISE EXCEPTION USING ERRCODE = '22003',
            MESSAGE = v_where || format('priority %s is out of range', spec -> 'priority'),
            HINT = 'Priorities go from -100 to 100; higher runs first.';
    WHEN 'max_retries_not_integer' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('max_retries must be an integer, not %s', spec -> 'max_retries');
    WHEN 'max_retries_out_of_range' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('max_retries %s is out of range', spec -> 'max_retries'),
            HINT = 'max_retries goes from 0 to 1000.';
    WHEN 'scheduled_for_invalid' THEN
        RAISE EXCEPTION USING ERRCODE = '22007',
            MESSAGE = v_where || format('scheduled_for %s is not a timestamp', spec -> 'scheduled_for'),
            HINT = 'Use ISO 8601, e.g. "2026-01-31T12:00:00Z".';
    WHEN 'dedupe_key_invalid' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('dedupe_key must be a string of 1 to 255 characters, not %s',
                                        left((spec -> 'dedupe_key')::text, 60));
    WHEN 'platform_invalid' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('platform must be a string of 1 to 100 characters, not %s',
                                        left((spec -> 'platform')::text, 60));
    WHEN 'headers_invalid' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || _task_headers_problem(spec -> 'headers'),
            HINT = 'headers is a JSON object of at most 32 strings (e.g. {"traceparent": "00-..."}), 8192 bytes in all.';
    WHEN 'backoff_base_invalid', 'backoff_cap_invalid' THEN
        v_backoff := left(problem, -length('_invalid'));
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('%s must be a number of seconds, more than 0 and at most %s (a year), not %s',
                                        v_backoff, c_max_backoff, left((spec -> v_backoff)::text, 60)),
            HINT = 'Omit it to take the role''s (task_roles.backoff_base, backoff_cap).';
    WHEN 'backoff_cap_below_base' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('backoff_cap %s is below backoff_base %s', spec -> 'backoff_cap', spec -> 'backoff_base'),
            HINT = 'The cap is the longest delay between retries: at least the first one.';
    WHEN 'dedupe_by_content_invalid' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('dedupe_by_content must be true or false, not %s',
                                        left((spec -> 'dedupe_by_content')::text, 60));
    WHEN 'dedupe_key_and_content' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || 'give a dedupe_key or dedupe_by_content, not both',
            HINT = 'dedupe_by_content makes the key task_spec_hash(role, dispensary_id, payload).';
    WHEN 'dedupe_window_invalid' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('dedupe_window must be an interval or a number of seconds, not %s',
                                        left((spec -> 'dedupe_window')::text, 60)),
            HINT = 'For example "1 hour", "PT30M" or 3600.';
    WHEN 'dedupe_window_out_of_range' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || format('dedupe_window %s is out of range', left((spec -> 'dedupe_window')::text, 60)),
            HINT = format('A dedupe window goes from 1 second to %s.', c_max_window);
    WHEN 'dedupe_window_without_key' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = v_where || 'dedupe_window needs a dedupe_key or dedupe_by_content',
            HINT = 'The window says how long a key holds; without a key there is nothing to hold.';
    END CASE;
END;
$$;

REVOKE ALL ON FUNCTION _raise_task_spec_problem(text, jsonb, text, bigint, integer) FROM PUBLIC;

COMMIT;
