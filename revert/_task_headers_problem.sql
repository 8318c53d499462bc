-- Deploy taskpool:_task_headers_problem to pg
-- requires: worker_tasks_headers

-- _task_headers_problem's home: its live body, unchanged from worker_tasks_headers.
-- Change _task_headers_problem here, with `sqitch rework _task_headers_problem`.

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
    RETURN NULL;
END;
$$;

COMMIT;
