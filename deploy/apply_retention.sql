-- Deploy taskpool:apply_retention to pg
-- requires: apply_retention@v0.8.0
-- requires: retention_policies_backlog

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION apply_retention(integer);

-- apply_retention
-- Applies every enabled retention policy in rounds of a batch each, until each is done, max_batches rounds or max_seconds; a row per policy with how many rows went.
CREATE FUNCTION apply_retention(max_batches integer DEFAULT 1, max_seconds numeric DEFAULT NULL,
                                count_backlog boolean DEFAULT false)
RETURNS TABLE (policy text, pruned bigint, finished boolean, error text)
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT * FROM apply_retention();                    -- a batch per policy
--   SELECT * FROM apply_retention(100, 2, true);        -- what the tick does: rounds for up to 2 s
--   CALL apply_retention_in_batches();                  -- until nothing is left, a transaction a round
-- Rounds, not a policy at a time: each round deletes a batch of every policy not done yet, so a
-- policy far behind (payloads after an outage) cannot spend the whole budget while the others
-- wait. The time is checked between rounds: a round is at most one batch a policy.
-- finished: nothing more of the policy's is old enough now (its last batch came back short), or
-- it failed. A policy whose row another transaction holds (a rival tick, a `pyworker prune`) is
-- skipped, not waited for, and has no row here. A policy that fails (a pruner that does not
-- exist, or raises) records last_error, keeps none of that batch's deletions, and does not stop
-- the others.
-- Each policy's row records the run: a finished one has backlog 0 and is not behind; one left
-- with rows due is behind (since its first such run) and, with count_backlog, has its pruner's
-- dry-run count as backlog (NULL without: counting can cost as much as a batch, so only the tick,
-- once a minute, asks for it).
DECLARE
    v_now      timestamptz := taskpool_now();
    v_started  timestamptz := clock_timestamp();
    v_policies retention_policies[];
    v_count    integer;
    v_pruned   bigint[];
    v_done     boolean[];
    v_errors   text[];
    v_batch    bigint;
    v_error    text;
    v_backlog  bigint;
    v_round    integer := 0;
    v_more     boolean;
BEGIN
    IF apply_retention.max_batches IS NULL OR apply_retention.max_batches < 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_batches must be positive, not %s',
                             coalesce(apply_retention.max_batches::text, 'NULL'));
    END IF;
    IF apply_retention.max_seconds <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_seconds must be positive, not %s', apply_retention.max_seconds),
            HINT = 'Omit it (NULL) to stop after max_batches rounds only.';
    END IF;

    SELECT array_agg(p ORDER BY p.name) INTO v_policies
    FROM (SELECT * FROM retention_policies p WHERE p.enabled ORDER BY p.name FOR UPDATE SKIP LOCKED) p;
    v_count := coalesce(cardinality(v_policies), 0);
    IF v_count = 0 THEN
        RETURN;
    END IF;
    v_pruned := array_fill(0::bigint, ARRAY[v_count]);
    v_done := array_fill(false, ARRAY[v_count]);
    v_errors := array_fill(NULL::text, ARRAY[v_count]);

    LOOP
        v_round := v_round + 1;
        v_more := false;
        FOR i IN 1 .. v_count LOOP
            CONTINUE WHEN v_done[i];
            BEGIN
                EXECUTE format('SELECT %s($1, $2, false)', _retention_pruner(v_policies[i])::oid::regproc)
                    INTO v_batch USING v_policies[i], v_policies[i].batch_size;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
                v_errors[i] := v_error;
                v_done[i] := true;
                CONTINUE;
            END;
            v_pruned[i] := v_pruned[i] + v_batch;
            IF v_batch < v_policies[i].batch_size THEN
                v_done[i] := true;
            ELSE
                v_more := true;
            END IF;
        END LOOP;
        EXIT WHEN NOT v_more
               OR v_round >= apply_retention.max_batches
               OR clock_timestamp() - v_started >= make_interval(secs => apply_retention.max_seconds);
    END LOOP;

    FOR i IN 1 .. v_count LOOP
        v_backlog := NULL;
        IF v_done[i] AND v_errors[i] IS NULL THEN
            v_backlog := 0;
        ELSIF apply_retention.count_backlog AND v_errors[i] IS NULL THEN
            BEGIN
                EXECUTE format('SELECT %s($1, NULL, true)', _retention_pruner(v_policies[i])::oid::regproc)
                    INTO v_backlog USING v_policies[i];
            EXCEPTION WHEN OTHERS THEN
                v_backlog := NULL;
            END;
        END IF;

        UPDATE retention_policies p
        SET last_run_at = v_now,
            last_pruned = v_pruned[i],
            pruned_total = p.pruned_total + v_pruned[i],
            last_error = v_errors[i],
            backlog = CASE WHEN v_errors[i] IS NULL THEN v_backlog ELSE p.backlog END,
            behind_since = CASE WHEN v_errors[i] IS NOT NULL THEN p.behind_since
                                WHEN v_done[i] THEN NULL
                                ELSE coalesce(p.behind_since, v_now) END
        WHERE p.name = v_policies[i].name;

        policy := v_policies[i].name;
        pruned := v_pruned[i];
        finished := v_done[i];
        error := v_errors[i];
        RETURN NEXT;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION apply_retention(integer, numeric, boolean) IS $$Applies every enabled retention policy in rounds of a batch each, until each is done, max_batches rounds or max_seconds, in the caller's transaction; a row per policy with how many rows went. Records each policy's backlog (with count_backlog) and since when it is behind.
Example:
  SELECT * FROM apply_retention();               -- a batch per policy
  SELECT * FROM apply_retention(100, 2, true);   -- what each tick does$$;

REVOKE ALL ON FUNCTION apply_retention(integer, numeric, boolean) FROM PUBLIC;

COMMIT;
