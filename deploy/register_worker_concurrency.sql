-- Deploy taskpool:register_worker_concurrency to pg
-- requires: register_worker
-- requires: task_workers_concurrency

BEGIN;
SET client_min_messages = 'warning';

-- register_worker(worker_id, roles[], host, pid, concurrency)
-- register_worker(worker_id, roles[], host, pid), and the tasks the process runs at once (its
-- slots), which v_worker_capacity counts capacity in.
CREATE FUNCTION register_worker(worker_id text, roles text[], host text, pid integer, concurrency integer)
RETURNS SETOF worker_registration
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT role, run_timeout FROM register_worker('w1', ARRAY['product_resync'], 'host-a', 4242, 20);
-- concurrency: 1 to 100000, else 22023 (NULL: 22004); the rest is checked as the four-argument
-- form checks it.
BEGIN
    IF register_worker.concurrency IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'concurrency is required',
            HINT = 'The tasks the worker runs at once (pyworker --concurrency), e.g. 1.';
    END IF;
    IF register_worker.concurrency NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('concurrency must be 1 to 100000, not %s', register_worker.concurrency);
    END IF;
    RETURN QUERY
    SELECT * FROM register_worker(register_worker.worker_id, register_worker.roles, register_worker.host,
                                  register_worker.pid);
    UPDATE task_workers w SET concurrency = register_worker.concurrency
    WHERE w.worker_id = register_worker.worker_id;
END;
$$;

REVOKE ALL ON FUNCTION register_worker(text, text[], text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION register_worker(text, text[], text, integer, integer) TO taskpool_worker;

COMMENT ON FUNCTION register_worker(text, text[], text, integer, integer) IS $$Enters a starting worker process that runs up to concurrency tasks at once (its slots) in the registry, and returns one row per role with that role's settings.
Example:
  SELECT role, run_timeout FROM register_worker('w1', ARRAY['product_resync'], 'host-a', 4242, 20);
v_worker_capacity counts capacity in these slots and in processes. The four-argument form registers one slot (a new row) or keeps the row's concurrency. concurrency out of 1 to 100000: 22023.$$;

COMMIT;
