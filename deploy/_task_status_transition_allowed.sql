-- Deploy taskpool:_task_status_transition_allowed to pg
-- requires: task_status_transition_allowed

-- _task_status_transition_allowed's home: its live body, unchanged from task_status_transition_allowed.
-- Change _task_status_transition_allowed here, with `sqitch rework _task_status_transition_allowed`.

BEGIN;
SET client_min_messages = 'warning';

-- Until the first compile below: nothing is allowed.
CREATE OR REPLACE FUNCTION _task_status_transition_allowed(from_status text, to_status text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT false;
$$;

-- The compile of the rows there now: the live body is tg_task_status_transitions__compile's,
-- written from task_status_transitions.
UPDATE task_status_transitions SET meaning = meaning WHERE false;

COMMIT;
