-- Deploy taskpool:_retention_pruner to pg
-- requires: apply_retention

-- _retention_pruner's home: its live body, unchanged from apply_retention.
-- Change _retention_pruner here, with `sqitch rework _retention_pruner`.

BEGIN;
SET client_min_messages = 'warning';

-- _retention_pruner
-- The pruner function a retention policy names, checked: pruner(retention_policies, integer, boolean) returning bigint.
CREATE OR REPLACE FUNCTION _retention_pruner(policy retention_policies)
RETURNS regprocedure
LANGUAGE plpgsql
STABLE
AS $$
-- Resolved on each call, as a day_plan schedule's planner is: a policy may name a function that
-- a later deploy (the crawler's) adds, or that a revert took away.
DECLARE
    v_pruner regprocedure := to_regprocedure(quote_ident(policy.pruner) || '(retention_policies, integer, boolean)');
BEGIN
    IF v_pruner IS NULL OR (SELECT p.prorettype FROM pg_proc p WHERE p.oid = v_pruner) <> 'bigint'::regtype THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('pruner %s(retention_policies, integer, boolean) returning bigint does not exist',
                             policy.pruner),
            HINT = 'A retention policy names a function pruner(policy retention_policies, max_rows integer, '
                   'dry_run boolean) that returns how many rows it deleted (or would delete).';
    END IF;
    RETURN v_pruner;
END;
$$;

COMMIT;
