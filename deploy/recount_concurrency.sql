-- Deploy taskpool:recount_concurrency to pg
-- requires: concurrency_limits
-- requires: _concurrency_keys_of

BEGIN;
SET client_min_messages = 'warning';

-- recount_concurrency
-- Repairs the running counts (concurrency_slots) from the tasks themselves; returns how many slots it changed.
CREATE FUNCTION recount_concurrency()
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT recount_concurrency();   -- 0: every count was right
-- The claim and the end of every attempt keep the counts in their own transactions, so a crash
-- cannot leave them wrong; what can is a hand-made change (rows edited with triggers off, a
-- restore, a limit set while tasks of its key ran). It reads the claimed and running tasks and
-- the slots, not the queue: cheap enough to run from cron or after any doubt.
-- 1. A slot held by a task that no longer runs is freed. The held slots are locked first, then
--    checked in a statement of their own, whose snapshot sees every claim that held them.
-- 2. Slots of a key no limit holds any more go; so do free slots above a key's limit.
-- 3. A running task of a capped key without a slot of it takes a free one, or one above the
--    limit (the key then counts more than its limit until its tasks end, and no claim takes it).
DECLARE
    v_changed integer := 0;
    v_rows    integer;
    v_held    record;
    v_slot    integer;
BEGIN
    PERFORM FROM concurrency_slots s WHERE s.task_id IS NOT NULL ORDER BY s.kind, s.key, s.slot FOR UPDATE;
    UPDATE concurrency_slots s
    SET task_id = NULL
    WHERE s.task_id IS NOT NULL
      AND NOT EXISTS (SELECT FROM worker_tasks t
                      WHERE t.id = s.task_id AND t.status IN ('claimed', 'running'));
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    v_changed := v_changed + v_rows;

    DELETE FROM concurrency_slots s
    USING (SELECT k.kind, k.key,
                  (SELECT l.max_running FROM concurrency_limits l
                   WHERE l.kind = k.kind AND l.key IN (k.key, '*')
                   ORDER BY l.key = '*' LIMIT 1) AS cap
           FROM (SELECT DISTINCT e.kind, e.key FROM concurrency_slots e) AS k) AS c
    WHERE s.kind = c.kind AND s.key = c.key
      AND (c.cap IS NULL OR (s.task_id IS NULL AND s.slot > c.cap));
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    v_changed := v_changed + v_rows;

    FOR v_held IN
        SELECT t.id, k.kind, k.key, lim.max_running
        FROM worker_tasks t
        CROSS JOIN LATERAL _concurrency_keys_of(t.role, t.platform, t.headers) AS k
        CROSS JOIN LATERAL (SELECT l.max_running FROM concurrency_limits l
                            WHERE l.kind = k.kind AND l.key IN (k.key, '*')
                            ORDER BY l.key = '*' LIMIT 1) AS lim
        WHERE t.status IN ('claimed', 'running')
          AND NOT EXISTS (SELECT FROM concurrency_slots s WHERE s.task_id = t.id AND s.kind = k.kind)
        ORDER BY k.kind, k.key, t.claimed_at, t.id
    LOOP
        INSERT INTO concurrency_slots (kind, key, slot)
        SELECT v_held.kind, v_held.key, n FROM generate_series(1, v_held.max_running) AS n
        ON CONFLICT DO NOTHING;
        SELECT s.slot INTO v_slot
        FROM concurrency_slots s
        WHERE s.kind = v_held.kind AND s.key = v_held.key AND s.task_id IS NULL AND s.slot <= v_held.max_running
        ORDER BY s.slot LIMIT 1
        FOR UPDATE;
        IF FOUND THEN
            UPDATE concurrency_slots s SET task_id = v_held.id
            WHERE s.kind = v_held.kind AND s.key = v_held.key AND s.slot = v_slot;
        ELSE
            INSERT INTO concurrency_slots (kind, key, slot, task_id)
            SELECT v_held.kind, v_held.key, max(s.slot) + 1, v_held.id
            FROM concurrency_slots s WHERE s.kind = v_held.kind AND s.key = v_held.key;
        END IF;
        v_changed := v_changed + 1;
    END LOOP;
    RETURN v_changed;
END;
$$;

REVOKE ALL ON FUNCTION recount_concurrency() FROM PUBLIC;

COMMENT ON FUNCTION recount_concurrency() IS $$Repairs the running counts of concurrency_limits from the claimed and running tasks; returns how many slots it changed.
Example:
  SELECT recount_concurrency();$$;

COMMIT;
