-- Deploy taskpool:apply_retention to pg
-- requires: retention_policies
-- requires: retention_core_pruners
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- _retention_pruner
-- The pruner function a retention policy names, checked: pruner(retention_policies, integer, boolean) returning bigint.
CREATE FUNCTION _retention_pruner(policy retention_policies)
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

-- apply_retention
-- Applies every enabled retention policy, up to max_batches batches of its batch_size each, in the caller's transaction; a row per policy with how many rows went.
CREATE FUNCTION apply_retention(max_batches integer DEFAULT 1)
RETURNS TABLE (policy text, pruned bigint, finished boolean, error text)
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT * FROM apply_retention();                 -- a batch per policy: what the tick does
--   SELECT * FROM apply_retention(max_batches := 10);
--   CALL apply_retention_in_batches();                -- until nothing is left, a transaction a round
-- The tick calls it with one batch per policy, so a deployment that runs only pg_cron gets
-- retention: with the default batch of 1000, each policy deletes up to 1000 rows a minute, never
-- holding more. finished: nothing more of the policy's is old enough now (its last batch came
-- back short), or it failed. A policy whose row another transaction holds (a rival tick, a
-- `pyworker prune`) is skipped, not waited for, and has no row here. A policy that fails (a
-- pruner that does not exist, or raises) records last_error, keeps none of that batch's
-- deletions, and does not stop the others.
DECLARE
    v_now    timestamptz := taskpool_now();
    v_policy retention_policies;
    v_pruner regprocedure;
    v_batch  bigint;
    v_total  bigint;
    v_done   boolean;
    v_error  text;
BEGIN
    IF apply_retention.max_batches IS NULL OR apply_retention.max_batches < 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_batches must be positive, not %s',
                             coalesce(apply_retention.max_batches::text, 'NULL'));
    END IF;

    FOR v_policy IN
        SELECT * FROM retention_policies p
        WHERE p.enabled
        ORDER BY p.name
        FOR UPDATE SKIP LOCKED
    LOOP
        v_total := 0;
        v_done := false;
        v_error := NULL;
        FOR i IN 1 .. apply_retention.max_batches LOOP
            BEGIN
                v_pruner := _retention_pruner(v_policy);
                EXECUTE format('SELECT %s($1, $2, false)', v_pruner::oid::regproc)
                    INTO v_batch USING v_policy, v_policy.batch_size;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
                v_done := true;
                EXIT;
            END;
            v_total := v_total + v_batch;
            IF v_batch < v_policy.batch_size THEN
                v_done := true;
                EXIT;
            END IF;
        END LOOP;

        UPDATE retention_policies p
        SET last_run_at = v_now,
            last_pruned = v_total,
            pruned_total = p.pruned_total + v_total,
            last_error = v_error
        WHERE p.name = v_policy.name;

        policy := v_policy.name;
        pruned := v_total;
        finished := v_done;
        error := v_error;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- apply_retention_in_batches
-- Applies every enabled retention policy until nothing is left to prune (or max_batches rounds, or max_seconds), committing after each round of a batch per policy and pausing pause_ratio times as long as the round took.
CREATE PROCEDURE apply_retention_in_batches(
    max_batches    integer DEFAULT NULL,
    max_seconds    numeric DEFAULT NULL,
    pause_ratio    numeric DEFAULT 3,
    INOUT pruned   jsonb   DEFAULT NULL)
LANGUAGE plpgsql
AS $$
-- Example:
--   CALL apply_retention_in_batches();                    -- pruned: {"completed_tasks": {"pruned": 1200, "error": null}, ...}
--   CALL apply_retention_in_batches(max_seconds := 60);   -- a minute's worth, then stop
--   CALL apply_retention_in_batches(pause_ratio := 0);    -- flat out, no pause between rounds
-- Each round is apply_retention(1) in a transaction of its own: no lock is held, and vacuum is
-- kept from no deleted row, for longer than one batch per policy. A policy leaves the rounds once
-- it is finished (its batch came back short, or it failed: error says why). After each round it
-- pauses pause_ratio times as long as the round took (3: a quarter of the time pruning, the rest
-- left to the workers; a busier server makes the rounds slower and the pauses longer), since a
-- prune that runs flat out takes a core and the WAL's bandwidth from the pool it serves
-- (`make bench`, figure 11: about 35,000 rows a second flat out here, about 9,000 paused). Call it outside a
-- transaction block (psql in autocommit, `pyworker prune`); inside one, its first commit raises
-- 2D000. pruned is its output: what it is given is ignored.
DECLARE
    v_started timestamptz := clock_timestamp();
    v_round   timestamptz;
    v_rounds  integer := 0;
    v_more    boolean;
    v_row     record;
BEGIN
    IF apply_retention_in_batches.max_batches < 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_batches must be positive, not %s', apply_retention_in_batches.max_batches),
            HINT = 'Omit it to prune until nothing is left.';
    END IF;
    IF apply_retention_in_batches.max_seconds <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_seconds must be positive, not %s', apply_retention_in_batches.max_seconds),
            HINT = 'Omit it to prune until nothing is left.';
    END IF;
    IF apply_retention_in_batches.pause_ratio IS NULL OR apply_retention_in_batches.pause_ratio NOT BETWEEN 0 AND 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('pause_ratio must be from 0 to 100, not %s',
                             coalesce(apply_retention_in_batches.pause_ratio::text, 'NULL')),
            HINT = '0 prunes flat out; 3 (the default) pauses three times as long as each round took.';
    END IF;
    pruned := '{}';
    LOOP
        v_round := clock_timestamp();
        v_more := false;
        FOR v_row IN SELECT * FROM apply_retention(1) LOOP
            pruned := pruned || jsonb_build_object(v_row.policy, jsonb_build_object(
                'pruned', coalesce((pruned -> v_row.policy ->> 'pruned')::bigint, 0) + v_row.pruned,
                'error', v_row.error));
            v_more := v_more OR NOT v_row.finished;
        END LOOP;
        COMMIT;
        v_rounds := v_rounds + 1;
        EXIT WHEN NOT v_more
               OR v_rounds >= apply_retention_in_batches.max_batches
               OR clock_timestamp() - v_started >= make_interval(secs => apply_retention_in_batches.max_seconds);
        PERFORM pg_sleep(extract(epoch FROM clock_timestamp() - v_round) * apply_retention_in_batches.pause_ratio);
    END LOOP;
END;
$$;

-- count_retention
-- What apply_retention would delete now, per policy (enabled or not), deleting nothing: retention's dry run.
CREATE FUNCTION count_retention()
RETURNS TABLE (policy text, enabled boolean, keep interval, would_prune bigint, error text)
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT * FROM count_retention();
-- Each policy's pruner counts with dry_run; one that fails says why in error (would_prune NULL).
DECLARE
    v_policy retention_policies;
BEGIN
    FOR v_policy IN SELECT * FROM retention_policies p ORDER BY p.name LOOP
        policy := v_policy.name;
        enabled := v_policy.enabled;
        keep := v_policy.keep;
        would_prune := NULL;
        error := NULL;
        BEGIN
            EXECUTE format('SELECT %s($1, NULL, true)', _retention_pruner(v_policy)::oid::regproc)
                INTO would_prune USING v_policy;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS error = MESSAGE_TEXT;
        END;
        RETURN NEXT;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION apply_retention(integer) IS $$Applies every enabled retention policy, up to max_batches batches of its batch_size each, in the caller's transaction; a row per policy with how many rows went.
Example:
  SELECT * FROM apply_retention();   -- a batch per policy, as each tick does$$;
COMMENT ON PROCEDURE apply_retention_in_batches(integer, numeric, numeric, jsonb) IS $$Applies every enabled retention policy until nothing is left to prune (or max_batches rounds, or max_seconds), committing after each round of a batch per policy and pausing pause_ratio times as long as the round took.
Example:
  CALL apply_retention_in_batches();   -- pruned: {"completed_tasks": {"pruned": 1200, "error": null}, ...}$$;
COMMENT ON FUNCTION count_retention() IS $$What apply_retention would delete now, per policy (enabled or not), deleting nothing: retention's dry run.
Example:
  SELECT * FROM count_retention();$$;

REVOKE ALL ON FUNCTION _retention_pruner(retention_policies) FROM PUBLIC;
REVOKE ALL ON FUNCTION apply_retention(integer) FROM PUBLIC;
REVOKE ALL ON PROCEDURE apply_retention_in_batches(integer, numeric, numeric, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION count_retention() FROM PUBLIC;

COMMIT;
