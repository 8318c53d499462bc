-- Deploy taskpool:task_wait_channel to pg

BEGIN;
SET client_min_messages = 'warning';

-- task_wait_channel
-- The LISTEN channel on which a session hears that a task it waits for finished.
CREATE FUNCTION task_wait_channel(backend_pid integer DEFAULT pg_backend_pid())
RETURNS text
LANGUAGE sql
STABLE
AS $$
    -- Example:
    --   SELECT task_wait_channel();   -- 'taskpool_task_done_12345': LISTEN on it, then register_task_waits
    -- One channel per session (backend), whatever tasks it waits for; the payload of each
    -- notification is the id of the task that finished.
    SELECT 'taskpool_task_done_' || task_wait_channel.backend_pid;
$$;

REVOKE ALL ON FUNCTION task_wait_channel(integer) FROM PUBLIC;

COMMIT;
