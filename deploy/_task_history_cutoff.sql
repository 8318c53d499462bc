-- Deploy taskpool:_task_history_cutoff to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- _task_history_cutoff
-- Where a prune of tasks finished before cutoff stops in worker_task_history: cutoff itself when it is less than a day ago, else the start of its UTC day.
CREATE FUNCTION _task_history_cutoff(cutoff timestamptz)
RETURNS timestamptz
LANGUAGE sql
STABLE
AS $$
    -- An age of a day or more retires the history by whole days (a leaf dropped at once, no dead
    -- row), so a task is kept up to a day longer than asked; a shorter age deletes rows.
    SELECT CASE WHEN taskpool_now() - _task_history_cutoff.cutoff >= interval '1 day'
                THEN date_trunc('day', _task_history_cutoff.cutoff, 'UTC')
                ELSE _task_history_cutoff.cutoff END
$$;

REVOKE ALL ON FUNCTION _task_history_cutoff(timestamptz) FROM PUBLIC;

COMMIT;
