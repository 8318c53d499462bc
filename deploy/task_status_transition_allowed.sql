-- Deploy taskpool:task_status_transition_allowed to pg
-- requires: task_status_transitions

BEGIN;
SET client_min_messages = 'warning';

-- task_status_transition_allowed
-- The rows of task_status_transitions compiled into a SQL function, recompiled whenever the table
-- changes, so that the trigger on worker_tasks checks a transition without running a query.
--
-- The BEFORE trigger of worker_tasks checked every status change with a lookup in the table: a
-- query through SPI for every row a claim or a completion changes. Measured on a batched cycle
-- (claim 100, complete 100, one client), that lookup was about 13 % of the cycle. A one-line SQL
-- function is inlined into the trigger's expression and costs a few comparisons; the table stays
-- the one place that says which changes are legal.

-- Until the first compile below: nothing is allowed.
CREATE FUNCTION _task_status_transition_allowed(from_status text, to_status text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT false;
$$;

-- Called by the trigger, which runs as the writer: the owner, or a SECURITY DEFINER function.
-- CREATE OR REPLACE keeps this.
REVOKE ALL ON FUNCTION _task_status_transition_allowed(text, text) FROM PUBLIC;

COMMENT ON FUNCTION _task_status_transition_allowed(text, text) IS
    'Whether task_status_transitions holds (from_status, to_status); compiled from that table by tg_task_status_transitions__compile.';

CREATE FUNCTION tg_task_status_transitions__compile()
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

REVOKE ALL ON FUNCTION tg_task_status_transitions__compile() FROM PUBLIC;

CREATE TRIGGER _500_compile
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON task_status_transitions
    FOR EACH STATEMENT EXECUTE FUNCTION tg_task_status_transitions__compile();

-- The first compile, of the rows there now.
UPDATE task_status_transitions SET meaning = meaning WHERE false;

COMMIT;
