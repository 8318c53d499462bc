-- Revert taskpool:apply_retention from pg

-- Back to apply_retention(max_batches), as deploy/apply_retention@v0.8.0.sql made it.

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION apply_retention(integer, numeric, boolean);

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

COMMENT ON FUNCTION apply_retention(integer) IS $$Applies every enabled retention policy, up to max_batches batches of its batch_size each, in the caller's transaction; a row per policy with how many rows went.
Example:
  SELECT * FROM apply_retention();   -- a batch per policy, as each tick does$$;

REVOKE ALL ON FUNCTION apply_retention(integer) FROM PUBLIC;

COMMIT;
