-- Deploy taskpool:set_task_history to pg
-- requires: task_history_settings

BEGIN;
SET client_min_messages = 'warning';

-- set_task_history
-- Changes when finished tasks move to worker_task_history and how many a tick moves; a NULL leaves a setting as it is. Returns the settings.
CREATE FUNCTION set_task_history(
    history_after interval DEFAULT NULL,
    batch_size    integer  DEFAULT NULL,
    max_batches   integer  DEFAULT NULL)
RETURNS task_history_settings
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT * FROM set_task_history(history_after := interval '0');   -- move as soon as folded
--   SELECT * FROM set_task_history(batch_size := 5000, max_batches := 20);
DECLARE
    v_settings task_history_settings;
BEGIN
    IF set_task_history.history_after NOT BETWEEN interval '0' AND interval '100 years' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('history_after must be from 0 to 100 years, not %s', set_task_history.history_after);
    END IF;
    IF set_task_history.batch_size NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('batch_size must be from 1 to 100000, not %s', set_task_history.batch_size);
    END IF;
    IF set_task_history.max_batches NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_batches must be from 1 to 1000, not %s', set_task_history.max_batches);
    END IF;
    UPDATE task_history_settings s
    SET history_after = coalesce(set_task_history.history_after, s.history_after),
        batch_size = coalesce(set_task_history.batch_size, s.batch_size),
        max_batches = coalesce(set_task_history.max_batches, s.max_batches)
    WHERE s.singleton
    RETURNING s.* INTO v_settings;
    RETURN v_settings;
END;
$$;

REVOKE ALL ON FUNCTION set_task_history(interval, integer, integer) FROM PUBLIC;

COMMENT ON FUNCTION set_task_history(interval, integer, integer) IS $$Changes when finished tasks move to worker_task_history (history_after) and how many a tick moves (batch_size, max_batches); a NULL leaves a setting as it is. Returns the settings.
Example:
  SELECT * FROM set_task_history(history_after := interval '0');$$;

COMMIT;
