-- Revert taskpool:register_worker from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 function, which returned the registry row only: another return type, so
-- dropped and created again (with its grants).
DROP FUNCTION register_worker(text, text, text, integer);

-- register_worker
-- Enters a starting worker in the registry (again, if its id was there) and returns its row.
CREATE FUNCTION register_worker(worker_id text, role text, host text, pid integer)
RETURNS task_workers
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM register_worker('w1', 'product_resync', 'host-a', 4242);
-- Unknown role: 22023 with the known roles in the hint.
DECLARE
    v_now    timestamptz := taskpool_now();
    v_worker task_workers;
BEGIN
    IF register_worker.worker_id IS NULL OR register_worker.role IS NULL
       OR register_worker.host IS NULL OR register_worker.pid IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'worker_id, role, host and pid are all required';
    END IF;
    IF length(register_worker.worker_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('worker_id must be 1 to 200 characters, not %s', length(register_worker.worker_id));
    END IF;
    IF NOT EXISTS (SELECT FROM task_roles r WHERE r.role = register_worker.role) THEN
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
    RETURN v_worker;
END;
$$;

REVOKE ALL ON FUNCTION register_worker(text, text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION register_worker(text, text, text, integer) TO taskpool_worker;

COMMIT;
