-- Deploy taskpool:diff_role to pg
-- requires: task_roles_backoff_jitter
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- diff_role
-- The settings given that differ from the role's in the database: one row per field, with the database's value and the one given.
CREATE FUNCTION diff_role(
    role               text,
    description        text     DEFAULT NULL,
    max_retries        integer  DEFAULT NULL,
    stale_threshold    interval DEFAULT NULL,
    run_timeout        interval DEFAULT NULL,
    backoff_base       interval DEFAULT NULL,
    backoff_cap        interval DEFAULT NULL,
    backoff_multiplier numeric  DEFAULT NULL,
    backoff_jitter     text     DEFAULT NULL,
    max_payload_bytes  integer  DEFAULT NULL,
    requires_store     boolean  DEFAULT NULL)
RETURNS TABLE (field text, in_database text, declared text)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM diff_role('send_welcome', max_retries := 5, stale_threshold := '5 minutes');
-- What update_role would change, changing nothing: `pyworker roles sync --dry-run` prints it,
-- and a starting worker compares its handlers' declarations with it (a worker login cannot
-- read task_roles, hence SECURITY DEFINER; settings are no secret). Intervals compare as
-- PostgreSQL compares them ('5 minutes' is '300 seconds'). A role that does not exist raises
-- P0002 (no_data_found), which a worker tells from a bad value (22023, 22007): it is the one
-- that `pyworker roles sync` creates.
DECLARE
    v_role task_roles;
BEGIN
    IF diff_role.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role is required';
    END IF;
    SELECT r.* INTO v_role FROM task_roles r WHERE r.role = diff_role.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('unknown role %L', diff_role.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    RETURN QUERY
    SELECT d.name, d.current, d.given
    FROM (VALUES
        (1, 'description', v_role.description, diff_role.description,
         v_role.description IS DISTINCT FROM diff_role.description),
        (2, 'max_retries', v_role.max_retries::text, diff_role.max_retries::text,
         v_role.max_retries IS DISTINCT FROM diff_role.max_retries),
        (3, 'stale_threshold', v_role.stale_threshold::text, diff_role.stale_threshold::text,
         v_role.stale_threshold IS DISTINCT FROM diff_role.stale_threshold),
        (4, 'run_timeout', v_role.run_timeout::text, diff_role.run_timeout::text,
         v_role.run_timeout IS DISTINCT FROM diff_role.run_timeout),
        (5, 'backoff_base', v_role.backoff_base::text, diff_role.backoff_base::text,
         v_role.backoff_base IS DISTINCT FROM diff_role.backoff_base),
        (6, 'backoff_cap', v_role.backoff_cap::text, diff_role.backoff_cap::text,
         v_role.backoff_cap IS DISTINCT FROM diff_role.backoff_cap),
        (7, 'backoff_multiplier', v_role.backoff_multiplier::text, diff_role.backoff_multiplier::text,
         v_role.backoff_multiplier IS DISTINCT FROM diff_role.backoff_multiplier),
        (8, 'backoff_jitter', v_role.backoff_jitter, diff_role.backoff_jitter,
         v_role.backoff_jitter IS DISTINCT FROM diff_role.backoff_jitter),
        (9, 'max_payload_bytes', v_role.max_payload_bytes::text, diff_role.max_payload_bytes::text,
         v_role.max_payload_bytes IS DISTINCT FROM diff_role.max_payload_bytes),
        (10, 'requires_store', v_role.requires_store::text, diff_role.requires_store::text,
         v_role.requires_store IS DISTINCT FROM diff_role.requires_store)
    ) AS d (position, name, current, given, differs)
    -- a setting not given is not declared: it differs from nothing
    WHERE d.given IS NOT NULL AND d.differs
    ORDER BY d.position;
END;
$$;

REVOKE ALL ON FUNCTION diff_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION diff_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) TO taskpool_worker;
COMMENT ON FUNCTION diff_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) IS $$The settings given that differ from the role's in the database: one row per field (field, in_database, declared), in the order of the arguments; none when they agree.
Example:
  SELECT * FROM diff_role('send_welcome', max_retries := 5, stale_threshold := '5 minutes');
Changes nothing. A setting not given is not compared. A role that does not exist raises P0002. Workers compare their handlers' declarations with it at start-up.$$;

COMMIT;
