-- Deploy taskpool:create_role to pg
-- requires: update_role

BEGIN;
SET client_min_messages = 'warning';

-- create_role
-- Adds a role; each setting not given takes the column's default. Returns the role's row.
CREATE FUNCTION create_role(
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
--   SELECT role, max_retries, stale_threshold FROM create_role('send_welcome', max_retries := 5,
--                                                              stale_threshold := '5 minutes');
-- `pyworker roles sync` calls it for a role a handler declares and the database lacks. The
-- row is inserted with the table's defaults first, so that they are stated once (task_roles),
-- then given the settings named by update_role, which checks them (_check_role): a bad value
-- raises naming its field and the whole call, the insert with it, is undone.
BEGIN
    IF create_role.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role is required';
    END IF;
    IF EXISTS (SELECT FROM task_roles r WHERE r.role = create_role.role) THEN
        RAISE EXCEPTION USING
            ERRCODE = '23505',
            MESSAGE = format('role %L already exists', create_role.role),
            HINT = 'update_role changes its settings; remove_role removes it.';
    END IF;
    IF create_role.role !~ '^[a-z][a-z0-9_]{0,62}$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('role %L is not a role name', create_role.role),
            HINT = 'A lower-case letter, then up to 62 lower-case letters, digits or underscores.';
    END IF;
    INSERT INTO task_roles (role) VALUES (create_role.role);
    RETURN update_role(create_role.role, create_role.description, create_role.max_retries,
                       create_role.stale_threshold, create_role.run_timeout, create_role.backoff_base,
                       create_role.backoff_cap, create_role.backoff_multiplier, create_role.backoff_jitter,
                       create_role.max_payload_bytes, create_role.requires_store);
END;
$$;

REVOKE ALL ON FUNCTION create_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) FROM PUBLIC;
COMMENT ON FUNCTION create_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean) IS $$Adds a role; each setting not given takes the column's default. Returns the role's row.
Example:
  SELECT role, max_retries, stale_threshold FROM create_role('send_welcome', max_retries := 5, stale_threshold := '5 minutes');
A role that exists raises 23505; a bad value raises 22023 naming its field, and nothing is written. An operator's function (pyworker roles sync), not the workers'.$$;

COMMIT;
