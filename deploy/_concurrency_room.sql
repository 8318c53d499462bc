-- Deploy taskpool:_concurrency_room to pg
-- requires: concurrency_limits

BEGIN;
SET client_min_messages = 'warning';

-- _concurrency_room
-- How many more tasks of a key may run now: its limit (its own, else its kind's default) less the slots its tasks hold; NULL when no limit holds it.
CREATE FUNCTION _concurrency_room(kind text, key text)
RETURNS integer
LANGUAGE sql
STABLE
AS $$
    -- Reads the key's slots (about max_running rows), never worker_tasks: the claim calls it
    -- for its role and for each (platform, key) it would walk.
    SELECT l.max_running - (SELECT count(*)::integer FROM concurrency_slots s
                            WHERE s.kind = _concurrency_room.kind AND s.key = _concurrency_room.key
                              AND s.task_id IS NOT NULL)
    FROM concurrency_limits l
    WHERE l.kind = _concurrency_room.kind AND l.key IN (_concurrency_room.key, '*')
    ORDER BY l.key = '*'
    LIMIT 1;
$$;

REVOKE ALL ON FUNCTION _concurrency_room(text, text) FROM PUBLIC;

COMMIT;
