-- Deploy taskpool:register_worker to pg
-- requires: register_worker@v0.5.0
-- requires: task_worker_roles

BEGIN;
SET client_min_messages = 'warning';

-- register_worker(worker_id, roles[], host, pid)
-- Enters a starting worker that serves several roles (pyworker --role a --role b) in the
-- registry (again, if its id was there) and returns one row per role, in the order given, each
-- with that role's settings. task_workers.role is the first role; task_worker_roles holds all.
CREATE FUNCTION register_worker(worker_id text, roles text[], host text, pid integer)
RETURNS SETOF worker_registration
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_now     timestamptz := taskpool_now();
    v_worker  task_workers;
    v_unknown text;
    v_repeated text;
BEGIN
    IF register_worker.worker_id IS NULL OR register_worker.roles IS NULL
       OR register_worker.host IS NULL OR register_worker.pid IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'worker_id, roles, host and pid are all required';
    END IF;
    IF coalesce(cardinality(register_worker.roles), 0) = 0 OR cardinality(register_worker.roles) > 100 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('a worker serves 1 to 100 roles, not %s', coalesce(cardinality(register_worker.roles), 0));
    END IF;
    IF array_position(register_worker.roles, NULL) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'roles must not contain NULL';
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
    SELECT string_agg(format('%L', given.role), ', ' ORDER BY given.n) INTO v_unknown
    FROM unnest(register_worker.roles) WITH ORDINALITY AS given(role, n)
    WHERE NOT EXISTS (SELECT FROM task_roles r WHERE r.role = given.role);
    IF v_unknown IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %s', v_unknown),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    SELECT string_agg(format('%L', given.role), ', ') INTO v_repeated
    FROM (SELECT g.role FROM unnest(register_worker.roles) AS g(role) GROUP BY g.role HAVING count(*) > 1) given;
    IF v_repeated IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('role %s given more than once', v_repeated);
    END IF;

    INSERT INTO task_workers AS w (worker_id, role, host, pid, started_at, last_seen_at)
    VALUES (register_worker.worker_id, register_worker.roles[1], left(register_worker.host, 255),
            register_worker.pid, v_now, v_now)
    ON CONFLICT ON CONSTRAINT task_workers_pkey DO UPDATE
    SET role = excluded.role, host = excluded.host, pid = excluded.pid,
        started_at = excluded.started_at, last_seen_at = excluded.last_seen_at
    RETURNING w.* INTO v_worker;
    -- Registered again with other roles: it no longer waits for, nor counts for, the others.
    DELETE FROM task_worker_roles wr
    WHERE wr.worker_id = register_worker.worker_id AND wr.role <> ALL (register_worker.roles);
    DELETE FROM task_worker_waits ww
    WHERE ww.worker_id = register_worker.worker_id AND ww.role <> ALL (register_worker.roles);
    INSERT INTO task_worker_roles (worker_id, role)
    SELECT register_worker.worker_id, given.role FROM unnest(register_worker.roles) AS given(role)
    ON CONFLICT DO NOTHING;

    RETURN QUERY
    SELECT v_worker.worker_id, r.role, v_worker.host, v_worker.pid, v_worker.started_at,
           v_worker.last_seen_at, r.max_retries, r.stale_threshold, r.run_timeout, r.requires_store
    FROM unnest(register_worker.roles) WITH ORDINALITY AS given(role, n)
    JOIN task_roles r ON r.role = given.role
    ORDER BY given.n;
END;
$$;

REVOKE ALL ON FUNCTION register_worker(text, text[], text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION register_worker(text, text[], text, integer) TO taskpool_worker;

-- register_worker(worker_id, role, host, pid)
-- A worker of one role: the same registration, one row.
CREATE OR REPLACE FUNCTION register_worker(worker_id text, role text, host text, pid integer)
RETURNS worker_registration
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_registration worker_registration;
BEGIN
    IF register_worker.worker_id IS NULL OR register_worker.role IS NULL
       OR register_worker.host IS NULL OR register_worker.pid IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'worker_id, role, host and pid are all required';
    END IF;
    SELECT * INTO v_registration
    FROM register_worker(register_worker.worker_id, ARRAY[register_worker.role], register_worker.host,
                         register_worker.pid);
    RETURN v_registration;
END;
$$;

COMMIT;
