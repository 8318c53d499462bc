-- Deploy taskpool:worker_wake_channel to pg
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- worker_wake_channel
-- The NOTIFY channel on which a worker is woken: one per worker id.
CREATE FUNCTION worker_wake_channel(worker_id text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Example:
    --   SELECT worker_wake_channel('w1');  -- then LISTEN on it (quote it as an identifier)
    -- A hash: a worker id may be up to 200 characters of anything, a channel name is an
    -- identifier of at most 63 bytes.
    SELECT 'taskpool_wake_' || md5(worker_wake_channel.worker_id);
$$;

REVOKE ALL ON FUNCTION worker_wake_channel(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION worker_wake_channel(text) TO taskpool_worker;

COMMIT;
