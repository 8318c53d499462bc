-- Deploy taskpool:platform_token_wait to pg
-- requires: task_roles_claims_platform_token
-- requires: taskpool_worker
-- requires: _platform_next_token_at

BEGIN;
SET client_min_messages = 'warning';

-- platform_token_wait
-- Seconds until the next token of a platform whose ready tasks of the role wait for one; NULL when none waits so.
CREATE FUNCTION platform_token_wait(role text)
RETURNS double precision
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT platform_token_wait('product_resync');   -- 0.31: claim again in 0.31 s; NULL: wait for a wake-up
-- A worker whose claim came back empty asks it before it sleeps: no enqueue will wake it when
-- the tasks were there all along and only their platforms' tokens were missing. One probe of
-- the claim's index (its key is coalesce(platform, '')) per platform without a token now, none
-- for a role that claims no token.
-- A token that came within the last second counts too, as due now (0): the worker's claim may
-- have come a moment before it, and that token is the worker's to take. One due for longer is
-- not what holds its tasks back (their stores are busy): waiting for it would make a busy loop.
    SELECT extract(epoch FROM min(greatest(b.next_token_at, taskpool_now())) - taskpool_now())::double precision
    FROM task_roles r
    CROSS JOIN LATERAL (
        SELECT g.platform, _platform_next_token_at(g.tokens, g.tokens_at, g.requests_per_minute) AS next_token_at
        FROM platform_governance g
        WHERE g.enabled AND NOT coalesce(g.open_until > taskpool_now(), false)
    ) AS b
    WHERE r.role = platform_token_wait.role
      AND r.claims_platform_token
      AND b.next_token_at > taskpool_now() - interval '1 second'
      AND EXISTS (SELECT FROM worker_tasks t
                  WHERE t.role = r.role AND t.status = 'pending' AND coalesce(t.platform, '') = b.platform
                    AND t.scheduled_for <= taskpool_now());
$$;

REVOKE ALL ON FUNCTION platform_token_wait(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform_token_wait(text) TO taskpool_worker;

COMMENT ON FUNCTION platform_token_wait(text) IS $$Seconds until the next token of a platform whose ready tasks of the role wait for one; NULL when none waits so.
Example:
  SELECT platform_token_wait('product_resync');   -- 0.31: claim again in 0.31 s; NULL: wait for a wake-up$$;

COMMIT;
