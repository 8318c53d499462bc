-- Deploy taskpool:update_role to pg
-- requires: _check_role

BEGIN;
SET client_min_messages = 'warning';

-- update_role
-- Changes the settings of a role that are given; the others keep their value. Returns the role's row.
CREATE FUNCTION update_role(
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
RETURNS task_roles
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT role, max_retries, run_timeout FROM update_role('send_welcome', max_retries := 7, run_timeout := '2 minutes');
-- Tasks already enqueued keep the max_retries they were given; the other settings are read when
-- they are used (a claim, a retry, a recovery, the next worker's start). A bad value raises
-- 22023 naming its field, and nothing is written.
DECLARE
    v_role task_roles;
BEGIN
    IF update_role.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role is required';
    END IF;
    SELECT r.* INTO v_role FROM task_roles r WHERE r.role = update_role.role FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', update_role.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    v_role.description        := coalesce(update_role.description, v_role.description);
    v_role.max_retries        := coalesce(update_role.max_retries, v_role.max_retries);
    v_role.stale_threshold    := coalesce(update_role.stale_threshold, v_role.stale_threshold);
    v_role.run_timeout        := coalesce(update_role.run_timeout, v_role.run_timeout);
    v_role.backoff_base       := coalesce(update_role.backoff_base, v_role.backoff_base);
    v_role.backoff_cap        := coalesce(update_role.backoff_cap, v_role.backoff_cap);
    v_role.backoff_multiplier := coalesce(update_role.backoff_multiplier, v_role.backoff_multiplier);
    v_role.backoff_jitter     := coalesce(update_role.backoff_jitter, v_role.backoff_jitter);
    v_role.max_payload_bytes  := coalesce(update_role.max_payload_bytes, v_role.max_payload_bytes);
    v_role.requires_store     := coalesce(update_role.requires_store, v_role.requires_store);
    PERFORM _check_role(v_role);

    UPDATE task_roles r
    SET description = v_role.description, max_retries = v_role.max_retries,
        stale_threshold = v_role.stale_threshold, run_timeout = v_role.run_timeout,
        backoff_base = v_role.backoff_base, backoff_cap = v_role.backoff_cap,
        backoff_multiplier = v_role.backoff_multiplier, backoff_jitter = v_role.backoff_jitter,
        max_payload_bytes = v_role.max_payload_bytes, requires_store = v_role.requires_store
    WHERE r.role = update_role.role
    RETURNING r.* INTO v_role;
    RETURN v_role;
END;
$$;

REVOKE ALL ON FUNCTION update_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) FROM PUBLIC;
COMMENT ON FUNCTION update_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) IS $$Changes the settings of a role that are given; the others keep their value. Returns the role's row.
Example:
  SELECT role, max_retries, run_timeout FROM update_role('send_welcome', max_retries := 7, run_timeout := '2 minutes');
An unknown role or a bad value raises 22023 naming it, and nothing is written. An operator's function (pyworker roles sync), not the workers'.$$;

COMMIT;
