-- Revert taskpool:complete_tasks from pg

BEGIN;
SET client_min_messages = 'warning';

-- complete_tasks, as in v0.5.0
-- Records the success of several tasks a worker holds in one transaction, with their results and
-- follow-up tasks; says for each whether it was recorded.
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
    v_bad   record;
    v_done  bigint[];
    v_chain record;
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

    SELECT c.idx, c.problem INTO v_bad
    FROM (
        SELECT e.idx,
            CASE
                WHEN jsonb_typeof(e.entry) <> 'object' THEN 'is not an object'
                WHEN EXISTS (SELECT FROM jsonb_object_keys(e.entry) k
                             WHERE k NOT IN ('task_id', 'attempt', 'result', 'follow_ups'))
                    THEN format('has unknown fields: %s',
                                (SELECT string_agg(k, ', ' ORDER BY k) FROM jsonb_object_keys(e.entry) k
                                 WHERE k NOT IN ('task_id', 'attempt', 'result', 'follow_ups')))
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
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('completions[%s] %s', v_bad.idx - 1, v_bad.problem),
            HINT = 'Each completion is {"task_id": ..., "attempt": ..., "result": ..., "follow_ups": [...]}.';
    END IF;

    WITH entries AS (
        SELECT _jsonb_bigint(e.entry -> 'task_id') AS id,
               _jsonb_integer(e.entry -> 'attempt') AS attempt,
               nullif(e.entry -> 'result', 'null') AS result
        FROM jsonb_array_elements(complete_tasks.completions) AS e(entry)
    ),
    completed AS (
        UPDATE worker_tasks t
        SET status = 'completed', result = entries.result
        FROM entries
        WHERE t.id = entries.id
          AND t.worker_id = complete_tasks.worker_id
          AND t.attempt = entries.attempt
          AND t.status IN ('claimed', 'running')
        RETURNING t.id
    )
    SELECT array_agg(completed.id) INTO v_done FROM completed;

    -- Only the tasks completed now queue follow-ups (a repeat's were queued the first time),
    -- each completion's on its own, so that an error names the completion it came from.
    FOR v_chain IN
        SELECT e.idx, e.entry -> 'follow_ups' AS follow_ups
        FROM jsonb_array_elements(complete_tasks.completions) WITH ORDINALITY AS e(entry, idx)
        WHERE _jsonb_bigint(e.entry -> 'task_id') = ANY (v_done)
          AND jsonb_array_length(coalesce(nullif(e.entry -> 'follow_ups', 'null'), '[]')) > 0
        ORDER BY e.idx
    LOOP
        PERFORM FROM _enqueue_specs(v_chain.follow_ups, format('completions[%s].follow_ups', v_chain.idx - 1));
    END LOOP;

    RETURN QUERY
    SELECT e.id, e.attempt,
        CASE
            WHEN e.id = ANY (v_done) THEN 'completed'
            WHEN t.id IS NULL THEN 'not_found'
            WHEN t.status = 'completed' AND t.worker_id = complete_tasks.worker_id
                 AND t.attempt = e.attempt THEN 'completed'
            ELSE 'lost'
        END
    FROM (
        SELECT _jsonb_bigint(x.entry -> 'task_id') AS id, _jsonb_integer(x.entry -> 'attempt') AS attempt, x.idx
        FROM jsonb_array_elements(complete_tasks.completions) WITH ORDINALITY AS x(entry, idx)
    ) e
    LEFT JOIN worker_tasks t ON t.id = e.id
    ORDER BY e.idx;
END;
$$;

REVOKE ALL ON FUNCTION complete_tasks(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION complete_tasks(text, jsonb) TO taskpool_worker;

COMMIT;
