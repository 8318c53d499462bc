-- Deploy taskpool:apply_retention_in_batches to pg
-- requires: apply_retention

-- apply_retention_in_batches's home: its live body, unchanged from apply_retention.
-- Change apply_retention_in_batches here, with `sqitch rework apply_retention_in_batches`.

BEGIN;
SET client_min_messages = 'warning';

-- apply_retention_in_batches
-- Applies every enabled retention policy until nothing is left to prune (or max_batches rounds, or max_seconds), committing after each round of a batch per policy and pausing pause_ratio times as long as the round took.
CREATE OR REPLACE PROCEDURE apply_retention_in_batches(
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

COMMIT;
