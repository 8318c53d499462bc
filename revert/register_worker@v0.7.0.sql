-- Revert taskpool:register_worker from pg

BEGIN;
SET client_min_messages = 'warning';

-- Workers of one role only again: the array form goes, the one-role form is v0.5.0's.
DROP FUNCTION register_worker(text, text[], text, integer);
DROP FUNCTION register_worker(text, text, text, integer);

-- register_worker
-- Enters a starting worker in the registry (again, if its id was there) and returns its row with
-- its role's settings: all a worker needs from the database to start, for a login granted
-- taskpool_worker only (which cannot read task_roles).
CREATE FUNCTION register_worker(worker_id text, role text, host text, pid integer)
RETURNS worker_registration
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT run_timeout, stale_threshold FROM register_worker('w1', 'product_resync', 'host-a', 4242);
-- Unknown role: 22023 with the known roles in the hint. A pid that is no process id (0 or
-- negative) and an empty host: 22023. A host longer than 255 characters is cut to 255.
DECLARE
    v_now    timestamptz := taskpool_now();
    v_worker task_workers;
    v_role   task_roles;
BEGIN
    IF register_worker.worker_id IS NULL OR register_worker.role IS NULL
       OR register_worker.host IS NULL OR register_worker.pid IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'worker_id, role, host and pid are all required';
    END IF;
    IF length(register_worker.worker_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('worker_id must be 1 to 200 characters, not %s', length(register_worker.worker_id));
    END IF;
    IF register_worker.pid <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('pid must be a positive process id, not %s', register_worker.pid);
    END IF;
    IF register_worker.host = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'host must not be empty',
            HINT = 'Pass the name of the machine the worker runs on.';
    END IF;
    SELECT * INTO v_role FROM task_roles r WHERE r.role = register_worker.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', register_worker.role),
            HINT = 'Known roles: ' || (SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r) || '.';
    END IF;

    INSERT INTO task_workers AS w (worker_id, role, host, pid, started_at, last_seen_at)
    VALUES (register_worker.worker_id, register_worker.role, left(register_worker.host, 255),
            register_worker.pid, v_now, v_now)
    ON CONFLICT ON CONSTRAINT task_workers_pkey DO UPDATE
    SET role = excluded.role, host = excluded.host, pid = excluded.pid,
        started_at = excluded.started_at, last_seen_at = excluded.last_seen_at
    RETURNING w.* INTO v_worker;
    RETURN ROW(v_worker.worker_id, v_worker.role, v_worker.host, v_worker.pid, v_worker.started_at,
               v_worker.last_seen_at, v_role.max_retries, v_role.stale_threshold, v_role.run_timeout,
               v_role.requires_store)::worker_registration;
END;
$$;

REVOKE ALL ON FUNCTION register_worker(text, text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION register_worker(text, text, text, integer) TO taskpool_worker;

COMMIT;
