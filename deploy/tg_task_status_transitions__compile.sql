-- Deploy taskpool:tg_task_status_transitions__compile to pg
-- requires: task_status_transition_allowed

-- tg_task_status_transitions__compile's home: its live body, unchanged from task_status_transition_allowed.
-- Change tg_task_status_transitions__compile here, with `sqitch rework tg_task_status_transitions__compile`.

BEGIN;
SET client_min_messages = 'warning';

CREATE OR REPLACE FUNCTION tg_task_status_transitions__compile()
RETURNS trigger
LANGUAGE plpgsql
-- Whoever may change the table may recompile the function its owner owns.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_cases text;
BEGIN
    SELECT string_agg(format('WHEN %L THEN to_status IN (%s)', s.from_status, s.targets), ' ' ORDER BY s.from_status)
    INTO v_cases
    FROM (SELECT t.from_status, string_agg(quote_literal(t.to_status), ', ' ORDER BY t.to_status) AS targets
          FROM task_status_transitions t
          GROUP BY t.from_status) s;

    EXECUTE format(
        $f$CREATE OR REPLACE FUNCTION _task_status_transition_allowed(from_status text, to_status text)
           RETURNS boolean
           LANGUAGE sql IMMUTABLE PARALLEL SAFE
           AS $body$ SELECT %s; $body$
        $f$,
        -- coalesce: a NULL status matches no WHEN, and says false rather than NULL
        CASE WHEN v_cases IS NULL THEN 'false'
             ELSE format('coalesce(CASE from_status %s ELSE false END, false)', v_cases) END);
    RETURN NULL;
END;
$$;

COMMIT;
