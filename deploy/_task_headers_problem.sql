-- Deploy taskpool:_task_headers_problem to pg
-- requires: _task_headers_problem@v0.8.0


-- The header concurrency_key names the task's own concurrency key (concurrency_limits): it is
-- checked here, as every header, so that a bad one is refused at enqueue with the spec's name.

BEGIN;
SET client_min_messages = 'warning';

-- _task_headers_problem
-- What is wrong with a task's headers, as an error message; NULL when they are fine.
CREATE OR REPLACE FUNCTION _task_headers_problem(headers jsonb)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
-- Example:
--   SELECT _task_headers_problem('{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}');  -- NULL
--   SELECT _task_headers_problem('{"n": 1}');  -- header "n" must be a string, not number
-- NULL and JSON null mean no headers and are fine.
DECLARE
    c_max_headers constant integer := 32;
    c_max_bytes   constant integer := 8192;
    v_bytes       integer;
    v_count       integer;
    v_bad         record;
BEGIN
    IF headers IS NULL OR jsonb_typeof(headers) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(headers) <> 'object' THEN
        RETURN format('headers must be a JSON object of strings, not %s', jsonb_typeof(headers));
    END IF;
    v_bytes := octet_length(headers::text);
    IF v_bytes > c_max_bytes THEN
        RETURN format('headers are %s bytes; at most %s are allowed', v_bytes, c_max_bytes);
    END IF;
    SELECT count(*) INTO v_count FROM jsonb_object_keys(headers);
    IF v_count > c_max_headers THEN
        RETURN format('headers has %s entries; at most %s are allowed', v_count, c_max_headers);
    END IF;
    SELECT e.key, e.value INTO v_bad
    FROM jsonb_each(headers) AS e
    WHERE length(e.key) NOT BETWEEN 1 AND 100 OR jsonb_typeof(e.value) <> 'string'
    ORDER BY e.key
    LIMIT 1;
    IF FOUND THEN
        IF length(v_bad.key) NOT BETWEEN 1 AND 100 THEN
            RETURN format('header name %s must have 1 to 100 characters', left(to_jsonb(v_bad.key)::text, 60));
        END IF;
        RETURN format('header %s must be a string, not %s', left(to_jsonb(v_bad.key)::text, 60),
                      jsonb_typeof(v_bad.value));
    END IF;
    IF headers ->> 'concurrency_key' IS NOT NULL THEN
        IF length(headers ->> 'concurrency_key') NOT BETWEEN 1 AND 200
           OR btrim(headers ->> 'concurrency_key') <> headers ->> 'concurrency_key'
           OR headers ->> 'concurrency_key' IN ('*', 'proxy:', 'proxy:*') THEN
            RETURN format('header "concurrency_key" must have 1 to 200 characters, no spaces at an end, '
                          'and not be ''*'' (every key) or name no proxy, not %s',
                          left(to_jsonb(headers ->> 'concurrency_key')::text, 60));
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

COMMIT;
