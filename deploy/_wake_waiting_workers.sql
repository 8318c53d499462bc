-- Deploy taskpool:_wake_waiting_workers to pg
-- requires: _wake_waiting_workers@v0.3.0
-- requires: task_wake_requests

BEGIN;
SET client_min_messages = 'warning';

-- It used to wake the workers at once and return how many; now they are woken at commit, and
-- how many is not known yet.
DROP FUNCTION _wake_waiting_workers(text, bigint);

-- _wake_waiting_workers
-- Asks for up to `ready` waiting workers of a role (the freshest heartbeats first) to be woken when this transaction commits.
CREATE FUNCTION _wake_waiting_workers(role text, ready bigint)
RETURNS void
LANGUAGE sql
SET search_path = public, pg_temp
AS $$
    -- Called by the enqueue and requeue triggers. Nothing is locked here: the role lock is taken,
    -- the workers chosen and notified at commit (task_wake_requests), so that an enqueue left
    -- open holds up no other session. Requests of one transaction add up.
    INSERT INTO task_wake_requests AS r (backend_pid, role, ready)
    VALUES (pg_backend_pid(), _wake_waiting_workers.role, _wake_waiting_workers.ready)
    ON CONFLICT (backend_pid, role) DO UPDATE SET ready = r.ready + excluded.ready;
$$;

REVOKE ALL ON FUNCTION _wake_waiting_workers(text, bigint) FROM PUBLIC;

COMMIT;
