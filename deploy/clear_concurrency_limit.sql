-- Deploy taskpool:clear_concurrency_limit to pg
-- requires: concurrency_limits
-- requires: recount_concurrency
-- requires: _concurrency_limit_problem

BEGIN;
SET client_min_messages = 'warning';

-- clear_concurrency_limit
-- Lifts a key's own limit (its kind's default, if any, holds it again), or a kind's default; returns whether there was one.
CREATE FUNCTION clear_concurrency_limit(kind text, key text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT clear_concurrency_limit('platform', 'slowshop');   -- true: it had one
DECLARE
    v_problem text;
BEGIN
    v_problem := _concurrency_limit_problem(clear_concurrency_limit.kind, clear_concurrency_limit.key);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_problem,
            HINT = 'Kinds: store, platform, proxy, role, key; key ''*'' is the kind''s default.';
    END IF;
    IF clear_concurrency_limit.kind = 'store' AND clear_concurrency_limit.key = '*' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'the stores'' limit (one task at a time) cannot be cleared',
            HINT = 'A task without a store (dispensary_id NULL) is not held by it.';
    END IF;
    DELETE FROM concurrency_limits l
    WHERE l.kind = clear_concurrency_limit.kind AND l.key = clear_concurrency_limit.key;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM recount_concurrency();
    RETURN true;
END;
$$;

REVOKE ALL ON FUNCTION clear_concurrency_limit(text, text) FROM PUBLIC;

COMMENT ON FUNCTION clear_concurrency_limit(text, text) IS $$Lifts a key's own limit, or a kind's default (key '*'); returns whether there was one.
Example:
  SELECT clear_concurrency_limit('platform', 'slowshop');$$;

COMMIT;
