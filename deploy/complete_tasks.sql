-- Deploy taskpool:complete_tasks to pg
-- requires: complete_tasks@v0.7.0
-- requires: complete_tasks_follow_up_parents

BEGIN;
SET client_min_messages = 'warning';

-- complete_tasks(worker_id, task_ids[], attempts[], claim_tokens[], results[], follow_ups[])
-- Records the success of several tasks a worker holds in one transaction, one element of each array per task, with their results and follow-up tasks; says for each whether it was recorded.
--
-- The worker's form (pyworker passes arrays, which psycopg adapts): no JSON to parse and check
-- on the hot path. The JSON form, complete_tasks(worker_id, completions), is for psql and other
-- languages; it parses its entries and calls this one, so the rules below are written once.
CREATE FUNCTION complete_tasks(
    worker_id    text,
    task_ids     bigint[],
    attempts     integer[],
    claim_tokens uuid[],
    results      jsonb[] DEFAULT NULL,
    follow_ups   jsonb[] DEFAULT NULL
)
RETURNS TABLE (task_id bigint, attempt integer, status text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM complete_tasks('w1', ARRAY[41, 42], ARRAY[1, 2],
--       ARRAY['5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', '0e7d5f3a-2c8b-4f1e-a6d9-3b4c5d6e7f80']::uuid[],
--       ARRAY['{"ok": true}', NULL]::jsonb[],
--       ARRAY[NULL, '[{"role": "product_refresh", "dispensary_id": 7}]']::jsonb[]);
-- Each task names its claim: the attempt and claim_token the claim returned. results and
-- follow_ups may be left out (NULL), or hold a NULL for a task without one. One row per task,
-- in the order given: status 'completed' (recorded now, or by an earlier call of this worker
-- for the same claim: a retried call is safe), 'lost' (the worker no longer holds that claim:
-- nothing changed for it) or 'not_found'. A lost task does not stop the others; a bad argument
-- or a bad follow-up fails the whole call and nothing is recorded. A follow_ups element is an
-- array of enqueue_tasks specs; its tasks remember their task as parent_id.
DECLARE
    v_count  integer := cardinality(complete_tasks.task_ids);
    v_bad    record;
    v_done   bigint[];
    v_chain  record;
BEGIN
    IF complete_tasks.worker_id IS NULL OR complete_tasks.task_ids IS NULL OR complete_tasks.attempts IS NULL
       OR complete_tasks.claim_tokens IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004',
            MESSAGE = 'worker_id, task_ids, attempts and claim_tokens are all required';
    END IF;
    IF cardinality(complete_tasks.attempts) <> v_count OR cardinality(complete_tasks.claim_tokens) <> v_count
       OR cardinality(complete_tasks.results) <> v_count OR cardinality(complete_tasks.follow_ups) <> v_count THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('task_ids, attempts, claim_tokens, results and follow_ups need one element per task,'
                             ' not %s, %s, %s, %s and %s', v_count, cardinality(complete_tasks.attempts),
                             cardinality(complete_tasks.claim_tokens),
                             coalesce(cardinality(complete_tasks.results)::text, 'none'),
                             coalesce(cardinality(complete_tasks.follow_ups)::text, 'none'));
    END IF;
    IF v_count > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '54000',
            MESSAGE = format('%s tasks given; at most 1000 go in one call', v_count);
    END IF;

    -- The arrays are read side by side with unnest (an omitted one gives NULLs), never by
    -- subscript: finding element i of a jsonb[] walks the elements before it.
    -- The first bad element, in the order given (a repeat is bad where it repeats).
    SELECT e.idx, e.problem INTO v_bad
    FROM (
        SELECT t.idx,
            CASE
                WHEN t.id IS NULL OR t.attempt IS NULL OR t.claim_token IS NULL
                    THEN format('task_ids[%1$s], attempts[%1$s] and claim_tokens[%1$s] are all required', t.idx)
                WHEN jsonb_typeof(t.follow_ups) NOT IN ('array', 'null')
                    THEN format('follow_ups[%s] is not an array', t.idx)
                WHEN row_number() OVER (PARTITION BY t.id ORDER BY t.idx) > 1
                    THEN format('task_ids[%s] repeats task %s', t.idx, t.id)
            END AS problem
        FROM unnest(complete_tasks.task_ids, complete_tasks.attempts, complete_tasks.claim_tokens,
                    complete_tasks.follow_ups) WITH ORDINALITY AS t(id, attempt, claim_token, follow_ups, idx)
    ) e
    WHERE e.problem IS NOT NULL
    ORDER BY e.idx
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = v_bad.problem;
    END IF;

    WITH completed AS (
        UPDATE worker_tasks t
        SET status = 'completed', result = nullif(e.result, 'null')
        FROM unnest(complete_tasks.task_ids, complete_tasks.attempts, complete_tasks.claim_tokens,
                    complete_tasks.results) AS e(id, attempt, claim_token, result)
        WHERE t.id = e.id
          AND t.worker_id = complete_tasks.worker_id
          AND t.attempt = e.attempt
          AND t.claim_token = e.claim_token
          AND t.status IN ('claimed', 'running')
        RETURNING t.id
    )
    SELECT array_agg(completed.id) INTO v_done FROM completed;

    -- Only the tasks completed now queue follow-ups (a repeat's were queued the first time),
    -- each task's on its own, so that an error names the task it came from.
    IF complete_tasks.follow_ups IS NOT NULL AND v_done IS NOT NULL THEN
        FOR v_chain IN
            SELECT f.idx, f.follow_ups, f.id
            FROM unnest(complete_tasks.task_ids, complete_tasks.follow_ups) WITH ORDINALITY AS f(id, follow_ups, idx)
            WHERE f.id = ANY (v_done)
              AND jsonb_typeof(f.follow_ups) = 'array'
              AND jsonb_array_length(f.follow_ups) > 0
            ORDER BY f.idx
        LOOP
            PERFORM FROM _enqueue_specs(v_chain.follow_ups, format('follow_ups[%s]', v_chain.idx), v_chain.id);
        END LOOP;
    END IF;

    -- A task completed now is 'completed' without another look; any other is looked up.
    RETURN QUERY
    SELECT e.id, e.attempt,
        CASE
            WHEN d.id IS NOT NULL THEN 'completed'
            ELSE coalesce((SELECT CASE WHEN w.status = 'completed' AND w.worker_id = complete_tasks.worker_id
                                            AND w.attempt = e.attempt AND w.claim_token = e.claim_token
                                       THEN 'completed'
                                       ELSE 'lost' END
                           FROM worker_tasks w
                           WHERE w.id = e.id), 'not_found')
        END
    FROM unnest(complete_tasks.task_ids, complete_tasks.attempts, complete_tasks.claim_tokens)
         WITH ORDINALITY AS e(id, attempt, claim_token, idx)
    LEFT JOIN unnest(v_done) AS d(id) ON d.id = e.id
    ORDER BY e.idx;
END;
$$;

REVOKE ALL ON FUNCTION complete_tasks(text, bigint[], integer[], uuid[], jsonb[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION complete_tasks(text, bigint[], integer[], uuid[], jsonb[], jsonb[]) TO taskpool_worker;

COMMENT ON FUNCTION complete_tasks(text, bigint[], integer[], uuid[], jsonb[], jsonb[]) IS $$Records the success of several tasks a worker holds in one transaction, one element of each array per task, with their results and follow-up tasks; says for each whether it was recorded.
Example:
  SELECT * FROM complete_tasks('w1', ARRAY[41], ARRAY[1],
      ARRAY['5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10']::uuid[], ARRAY['{"ok": true}']::jsonb[]);$$;

-- complete_tasks(worker_id, completions)
-- Records the success of several tasks a worker holds in one transaction, given as a JSON array, with their results and follow-up tasks; says for each whether it was recorded.
--
-- The form for psql and other languages. It checks the JSON, naming the first bad entry, and
-- hands the entries as arrays to complete_tasks(worker_id, task_ids, attempts, claim_tokens,
-- results, follow_ups), which records them. One pass parses and checks the entries; the full
-- check, which names the first bad entry, runs only when that pass finds one.
CREATE OR REPLACE FUNCTION complete_tasks(worker_id text, completions jsonb)
RETURNS TABLE (task_id bigint, attempt integer, status text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM complete_tasks('w1', '[
--       {"task_id": 41, "attempt": 1, "claim_token": "5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10",
--        "result": {"ok": true}},
--       {"task_id": 42, "attempt": 2, "claim_token": "0e7d5f3a-2c8b-4f1e-a6d9-3b4c5d6e7f80",
--        "follow_ups": [{"role": "product_refresh", "dispensary_id": 7}]}]');
-- Each completion names its claim: the attempt and claim_token the claim returned. One row per
-- completion, in the order given: status 'completed' (recorded now, or by an earlier call of
-- this worker for the same claim: a retried call is safe), 'lost' (the worker no longer holds
-- that claim: nothing changed for it) or 'not_found'. A lost task does not
-- stop the others; a malformed completion or a bad follow-up fails the whole call and nothing
-- is recorded. follow_ups take the specs of enqueue_tasks, and remember their task as parent_id;
-- an error in one names it as follow_ups[N] (N from 1, the completion's place).
DECLARE
    c_fields       constant text[] := ARRAY['task_id', 'attempt', 'claim_token', 'result', 'follow_ups'];
    -- A claim_token as claim_task prints it (what uuid's text form is); only then is it cast.
    c_uuid         constant text := '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
    v_ids          bigint[];
    v_attempts     integer[];
    v_tokens       uuid[];
    v_results      jsonb[];
    v_follow_ups   jsonb[];
    v_well_formed  boolean;
    v_bad          record;
BEGIN
    IF complete_tasks.worker_id IS NULL OR complete_tasks.completions IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'worker_id and completions are both required';
    END IF;
    IF jsonb_typeof(complete_tasks.completions) <> 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('completions must be a JSON array of {task_id, attempt, claim_token, result, follow_ups}'
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
           array_agg(p.claim_token ORDER BY p.idx), array_agg(p.result ORDER BY p.idx),
           array_agg(p.follow_ups ORDER BY p.idx), coalesce(bool_and(p.well_formed), true)
    INTO v_ids, v_attempts, v_tokens, v_results, v_follow_ups, v_well_formed
    FROM (
        SELECT e.idx,
               _jsonb_bigint(e.entry -> 'task_id') AS id,
               _jsonb_integer(e.entry -> 'attempt') AS attempt,
               CASE WHEN jsonb_typeof(e.entry -> 'claim_token') = 'string' AND (e.entry ->> 'claim_token') ~ c_uuid
                    THEN (e.entry ->> 'claim_token')::uuid END AS claim_token,
               nullif(e.entry -> 'result', 'null') AS result,
               CASE WHEN jsonb_typeof(e.entry) = 'object' THEN
                   CASE WHEN e.entry - c_fields = '{}'::jsonb
                             AND _jsonb_bigint(e.entry -> 'task_id') IS NOT NULL
                             AND _jsonb_integer(e.entry -> 'attempt') IS NOT NULL
                             AND jsonb_typeof(e.entry -> 'claim_token') = 'string'
                             AND (e.entry ->> 'claim_token') ~ c_uuid
                        THEN coalesce(jsonb_typeof(nullif(e.entry -> 'follow_ups', 'null')), 'array') = 'array'
                        ELSE false
                   END
                   ELSE false
               END AS well_formed,
               nullif(e.entry -> 'follow_ups', 'null') AS follow_ups
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
                    WHEN jsonb_typeof(e.entry -> 'claim_token') IS DISTINCT FROM 'string'
                         OR NOT (e.entry ->> 'claim_token') ~ c_uuid
                        THEN 'needs the claim_token of its claim (a UUID string)'
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
            HINT = 'Each completion is {"task_id": ..., "attempt": ..., "claim_token": "...", "result": ..., "follow_ups": [...]}.';
    END IF;

    RETURN QUERY
    SELECT * FROM complete_tasks(complete_tasks.worker_id, coalesce(v_ids, '{}'), coalesce(v_attempts, '{}'),
                                 coalesce(v_tokens, '{}'), coalesce(v_results, '{}'), coalesce(v_follow_ups, '{}'));
END;
$$;

COMMIT;
