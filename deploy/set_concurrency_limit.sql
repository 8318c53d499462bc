-- Deploy taskpool:set_concurrency_limit to pg
-- requires: concurrency_limits
-- requires: recount_concurrency
-- requires: _concurrency_limit_problem

BEGIN;
SET client_min_messages = 'warning';

-- set_concurrency_limit
-- Caps how many tasks of a key run at once, fleet-wide (key '*': every key of the kind without a limit of its own); returns the limit.
CREATE FUNCTION set_concurrency_limit(kind text, key text, max_running integer)
RETURNS concurrency_limits
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM set_concurrency_limit('platform', 'slowshop', 3);   -- 3 of its tasks at once
--   SELECT * FROM set_concurrency_limit('key', '*', 1);               -- every task-named key: 1
-- kind: store (only 1: the store exclusion), platform, proxy, role, key. Bad input raises and
-- changes nothing. Tasks of the key that run already go on; a limit below their number
-- holds back new claims until fewer than max_running run.
DECLARE
    v_problem text;
    v_limit   concurrency_limits;
BEGIN
    v_problem := _concurrency_limit_problem(set_concurrency_limit.kind, set_concurrency_limit.key);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_problem,
            HINT = 'Kinds: store, platform, proxy, role, key; key ''*'' is the kind''s default.';
    END IF;
    IF set_concurrency_limit.max_running IS NULL OR set_concurrency_limit.max_running < 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('max_running must be 1 or more, not %s', coalesce(set_concurrency_limit.max_running::text, 'NULL')),
            HINT = 'To stop a key''s tasks, pause the role or disable the platform; to lift a limit, clear_concurrency_limit.';
    END IF;
    IF set_concurrency_limit.kind = 'store' AND set_concurrency_limit.max_running <> 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('a store runs one task at a time: max_running must be 1, not %s', set_concurrency_limit.max_running),
            HINT = 'Name the task''s own concurrency_key (kind key) for a cap above 1 per store.';
    END IF;

    INSERT INTO concurrency_limits AS l (kind, key, max_running)
    VALUES (set_concurrency_limit.kind, set_concurrency_limit.key, set_concurrency_limit.max_running)
    ON CONFLICT ON CONSTRAINT concurrency_limits_pkey
    DO UPDATE SET max_running = excluded.max_running, updated_at = taskpool_now()
    RETURNING l.* INTO v_limit;
    -- The tasks of the key that run already take their slots now.
    IF set_concurrency_limit.kind <> 'store' THEN
        PERFORM recount_concurrency();
    END IF;
    RETURN v_limit;
END;
$$;

REVOKE ALL ON FUNCTION set_concurrency_limit(text, text, integer) FROM PUBLIC;

COMMENT ON FUNCTION set_concurrency_limit(text, text, integer) IS $$Caps how many tasks of a key run at once, fleet-wide; key '*' is the kind's default.
Example:
  SELECT * FROM set_concurrency_limit('platform', 'slowshop', 3);$$;

COMMIT;
