-- Deploy taskpool:complete_tasks to pg
-- requires: complete_tasks@v0.5.0

BEGIN;
SET client_min_messages = 'warning';

-- complete_tasks
-- Records the success of several tasks a worker holds in one transaction, with their results and
-- follow-up tasks; says for each whether it was recorded.
--
-- It is the worker's hot path: every outcome a pyworker records goes through it, in batches of up
-- to 1,000. Measured on a batched cycle (claim 100, complete 100, one client), v0.5.0's body took
-- longer than the claim: it walked the JSON array four times, listed each entry's keys with a
-- subquery, numbered the entries with a window function, and looked up every task again for its
-- answer. Now one pass parses and checks the entries; the full check, which names the first bad
-- entry, runs only when that pass finds one; only tasks not completed now are looked up again.
CREATE OR REPLACE FUNCTION complete_tasks(worker_id text, completions jsonb)
RETURNS TABLE (task_id bigint, attempt integer, status text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM complete_tasks('w1', '[{"task_id": 41, "attempt": 1, "result": {"ok": true}},
--                                        {"task_id": 42, "attempt": 2,
--                                         "follow_ups": [{"role": "product_refresh", "dispensary_id": 7}]}]');
-- One row per completion, in the order given: status 'completed' (recorded now, or by an
-- earlier call of this worker for the same attempt: a retried call is safe), 'lost' (the worker
-- no longer owns that attempt: nothing changed for it) or 'not_found'. A lost task does not
-- stop the others; a malformed completion or a bad follow-up fails the whole call and nothing
-- is recorded. follow_ups take the specs of enqueue_tasks.
DECLARE
    c_fields       constant text[] := ARRAY['task_id', 'attempt', 'result', 'follow_ups'];
    v_ids          bigint[];
    v_attempts     integer[];
    v_results      jsonb[];
    v_well_formed  boolean;
    v_any_follow   boolean;
    v_bad          record;
    v_done         bigint[];
    v_chain        record;
BEGIN
    IF complete_tasks.worker_id IS NULL OR complete_tasks.completions IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'worker_id and completions are both required';
    END IF;
    IF jsonb_typeof(complete_tasks.completions) <> 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('completions must be a JSON array of {task_id, attempt, result, follow_ups}'
                             ' objects, not %s', jsonb_typeof(complete_tasks.completions));
    END IF;
    IF jsonb_array_length(complete_tasks.completions) > 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '54000',
            MESSAGE = format('completions has %s entries; at most 1000 go in one call',
                             jsonb_array_length(complete_tasks.completions));
    END IF;

    -- One pass: each entry parsed, and whether every one is well formed (nested CASEs: the
    -- key subtraction raises on a scalar, and AND does not promise its order).
    SELECT array_agg(p.id ORDER BY p.idx), array_agg(p.attempt ORDER BY p.idx),
           array_agg(p.result ORDER BY p.idx),
           coalesce(bool_and(p.well_formed), true), coalesce(bool_or(p.has_follow_ups), false)
    INTO v_ids, v_attempts, v_results, v_well_formed, v_any_follow
    FROM (
        SELECT e.idx,
               _jsonb_bigint(e.entry -> 'task_id') AS id,
               _jsonb_integer(e.entry -> 'attempt') AS attempt,
               nullif(e.entry -> 'result', 'null') AS result,
               CASE WHEN jsonb_typeof(e.entry) = 'object' THEN
                   CASE WHEN e.entry - c_fields = '{}'::jsonb
                             AND _jsonb_bigint(e.entry -> 'task_id') IS NOT NULL
                             AND _jsonb_integer(e.entry -> 'attempt') IS NOT NULL
                        THEN coalesce(jsonb_typeof(nullif(e.entry -> 'follow_ups', 'null')), 'array') = 'array'
                        ELSE false
                   END
                   ELSE false
               END AS well_formed,
               CASE WHEN jsonb_typeof(e.entry -> 'follow_ups') = 'array'
                    THEN jsonb_array_length(e.entry -> 'follow_ups') > 0
                    ELSE false
               END AS has_follow_ups
        FROM jsonb_array_elements(complete_tasks.completions) WITH ORDINALITY AS e(entry, idx)
    ) p;

    IF NOT v_well_formed
       OR cardinality(v_ids) <> (SELECT count(DISTINCT i.id) FROM unnest(v_ids) AS i(id)) THEN
        -- Name the first bad entry, in the order given (a repeat is bad where it repeats).
        SELECT c.idx, c.problem INTO v_bad
        FROM (
            SELECT e.idx,
                CASE
                    WHEN jsonb_typeof(e.entry) <> 'object' THEN 'is not an object'
                    WHEN e.entry - c_fields <> '{}'::jsonb
                        THEN format('has unknown fields: %s',
                                    (SELECT string_agg(k, ', ' ORDER BY k)
                                     FROM jsonb_object_keys(e.entry - c_fields) k))
                    WHEN _jsonb_bigint(e.entry -> 'task_id') IS NULL THEN 'needs an integer task_id'
                    WHEN _jsonb_integer(e.entry -> 'attempt') IS NULL THEN 'needs an integer attempt'
                    WHEN jsonb_typeof(nullif(e.entry -> 'follow_ups', 'null')) <> 'array'
                        THEN 'has follow_ups that are not an array'
                    WHEN row_number() OVER (PARTITION BY _jsonb_bigint(e.entry -> 'task_id') ORDER BY e.idx) > 1
                        THEN format('repeats task %s', _jsonb_bigint(e.entry -> 'task_id'))
                END AS problem
            FROM jsonb_array_elements(complete_tasks.completions) WITH ORDINALITY AS e(entry, idx)
        ) c
        WHERE c.problem IS NOT NULL
        ORDER BY c.idx
        LIMIT 1;
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('completions[%s] %s', v_bad.idx - 1, v_bad.problem),
            HINT = 'Each completion is {"task_id": ..., "attempt": ..., "result": ..., "follow_ups": [...]}.';
    END IF;

    WITH completed AS (
        UPDATE worker_tasks t
        SET status = 'completed', result = e.result
        FROM unnest(v_ids, v_attempts, v_results) AS e(id, attempt, result)
        WHERE t.id = e.id
          AND t.worker_id = complete_tasks.worker_id
          AND t.attempt = e.attempt
          AND t.status IN ('claimed', 'running')
        RETURNING t.id
    )
    SELECT array_agg(completed.id) INTO v_done FROM completed;

    -- Only the tasks completed now queue follow-ups (a repeat's were queued the first time),
    -- each completion's on its own, so that an error names the completion it came from.
    IF v_any_follow AND v_done IS NOT NULL THEN
        FOR v_chain IN
            SELECT e.idx, e.entry -> 'follow_ups' AS follow_ups
            FROM jsonb_array_elements(complete_tasks.completions) WITH ORDINALITY AS e(entry, idx)
            WHERE _jsonb_bigint(e.entry -> 'task_id') = ANY (v_done)
              AND jsonb_typeof(e.entry -> 'follow_ups') = 'array'
              AND jsonb_array_length(e.entry -> 'follow_ups') > 0
            ORDER BY e.idx
        LOOP
            PERFORM FROM _enqueue_specs(v_chain.follow_ups, format('completions[%s].follow_ups', v_chain.idx - 1));
        END LOOP;
    END IF;

    -- A task completed now is 'completed' without another look; any other is looked up.
    RETURN QUERY
    SELECT e.id, e.attempt,
        CASE
            WHEN d.id IS NOT NULL THEN 'completed'
            ELSE coalesce((SELECT CASE WHEN w.status = 'completed' AND w.worker_id = complete_tasks.worker_id
                                            AND w.attempt = e.attempt THEN 'completed'
                                       ELSE 'lost' END
                           FROM worker_tasks w
                           WHERE w.id = e.id), 'not_found')
        END
    FROM unnest(v_ids, v_attempts) WITH ORDINALITY AS e(id, attempt, idx)
    LEFT JOIN unnest(v_done) AS d(id) ON d.id = e.id
    ORDER BY e.idx;
END;
$$;

REVOKE ALL ON FUNCTION complete_tasks(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION complete_tasks(text, jsonb) TO taskpool_worker;

COMMIT;
