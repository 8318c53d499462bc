-- Deploy taskpool:_check_role to pg
-- requires: task_roles_backoff_jitter
-- requires: task_roles_stale_threshold_at_most_a_year

BEGIN;
SET client_min_messages = 'warning';

-- _check_role
-- Raises, naming the field and what it may be, for the first setting of a role that cannot stand.
CREATE FUNCTION _check_role(role task_roles)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT _check_role(r) FROM task_roles r;
-- create_role and update_role call it before they write, so that a bad value gets a message
-- that names its field and the values allowed rather than a CHECK constraint's name. The
-- bounds are the table's CHECKs, and enqueue's for max_retries. The name is create_role's to
-- check: no other function gives one.
BEGIN
    IF length(role.description) > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('description must be at most 1000 characters, not %s', length(role.description));
    END IF;
    IF role.max_retries NOT BETWEEN 0 AND 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('max_retries must be 0 to 1000, not %s', role.max_retries);
    END IF;
    IF NOT (role.stale_threshold > interval '0' AND role.stale_threshold <= interval '1 year') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('stale_threshold must be more than 0 and at most 1 year, not %s', role.stale_threshold),
            HINT = 'A running task with no heartbeat for this long is taken back: e.g. ''10 minutes''.';
    END IF;
    IF NOT role.run_timeout > interval '0' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('run_timeout must be more than 0, not %s', role.run_timeout);
    END IF;
    IF NOT role.backoff_base > interval '0' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('backoff_base must be more than 0, not %s', role.backoff_base);
    END IF;
    IF role.backoff_cap < role.backoff_base THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('backoff_cap must be at least backoff_base (%s), not %s', role.backoff_base, role.backoff_cap);
    END IF;
    IF role.backoff_multiplier NOT BETWEEN 1 AND 10 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('backoff_multiplier must be 1 to 10, not %s', role.backoff_multiplier);
    END IF;
    IF role.backoff_jitter NOT IN ('full', 'equal', 'none') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('backoff_jitter must be full, equal or none, not %L', role.backoff_jitter);
    END IF;
    IF NOT role.max_payload_bytes > 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('max_payload_bytes must be more than 0, not %s', role.max_payload_bytes);
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION _check_role(task_roles) FROM PUBLIC;

COMMIT;
