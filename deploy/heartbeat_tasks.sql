-- Deploy taskpool:heartbeat_tasks to pg
-- requires: heartbeat_task
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

-- heartbeat_tasks
-- Keeps all the tasks a worker holds alive in one call and answers, for each, what heartbeat_task
-- would: continue, cancel_requested, lost or not_found; or busy: another transaction is changing
-- the task this instant (its completion, a cancel, a recovery), so it was not beaten this time.
CREATE FUNCTION heartbeat_tasks(worker_id text, task_ids bigint[], attempts integer[], claim_tokens uuid[])
RETURNS TABLE (task_id bigint, answer text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM heartbeat_tasks('w1', ARRAY[41, 42], ARRAY[1, 3],
--       ARRAY['5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', '0e7d5f3a-2c8b-4f1e-a6d9-3b4c5d6e7f80']::uuid[]);
--   -- (41, 'continue'), (42, 'cancel_requested')
-- One row per task, in the order given; task_ids[i] is heartbeated at attempts[i] and
-- claim_tokens[i]. Each answer means what heartbeat_task's does, and each task is fenced as
-- heartbeat_task fences it: only a claimed or running task held by worker_id under that claim
-- (attempt and token) is kept alive. Bad input (a NULL,
-- arrays of different lengths, more than 1000 tasks, a task given twice) is refused and changes
-- nothing; empty arrays answer no rows.
DECLARE
    v_count integer := coalesce(cardinality(heartbeat_tasks.task_ids), 0);
    v_repeated bigint;
    v_locked   bigint[];
BEGIN
    IF heartbeat_tasks.worker_id IS NULL OR heartbeat_tasks.task_ids IS NULL OR heartbeat_tasks.attempts IS NULL
       OR heartbeat_tasks.claim_tokens IS NULL
       OR (array_ndims(heartbeat_tasks.task_ids) = 1 AND array_position(heartbeat_tasks.task_ids, NULL) IS NOT NULL)
       OR (array_ndims(heartbeat_tasks.attempts) = 1 AND array_position(heartbeat_tasks.attempts, NULL) IS NOT NULL)
       OR (array_ndims(heartbeat_tasks.claim_tokens) = 1 AND array_position(heartbeat_tasks.claim_tokens, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'worker_id, task_ids, attempts and claim_tokens are all required, and no task id, attempt or claim_token may be NULL',
            HINT = 'Pass the worker_id, and the id, attempt and claim_token of each task claim_and_start_tasks returned.';
    END IF;
    IF array_ndims(heartbeat_tasks.task_ids) > 1 OR array_ndims(heartbeat_tasks.attempts) > 1
       OR array_ndims(heartbeat_tasks.claim_tokens) > 1
       OR v_count <> coalesce(cardinality(heartbeat_tasks.attempts), 0)
       OR v_count <> coalesce(cardinality(heartbeat_tasks.claim_tokens), 0) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('task_ids, attempts and claim_tokens must be one-dimensional arrays of the same length, not %s, %s and %s',
                             v_count, coalesce(cardinality(heartbeat_tasks.attempts), 0),
                             coalesce(cardinality(heartbeat_tasks.claim_tokens), 0)),
            HINT = 'attempts[i] and claim_tokens[i] are the claim of task_ids[i].';
    END IF;
    IF v_count > 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('task_ids has %s entries; at most 1000 go in one call', v_count),
            HINT = 'Heartbeat from 1 to 1000 tasks at a time.';
    END IF;
    SELECT i.id INTO v_repeated
    FROM unnest(heartbeat_tasks.task_ids) AS i(id)
    GROUP BY i.id HAVING count(*) > 1
    ORDER BY i.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('task_ids repeats task %s', v_repeated),
            HINT = 'Give each task once.';
    END IF;

    -- The rows to keep alive, those no other transaction is changing right now. Never waiting
    -- for a row: complete_tasks locks a batch in the order its plan meets the rows, not in id
    -- order, so a heartbeat that waited for one of them while holding others could deadlock
    -- with it. A row skipped now is beaten at the next interval (answer busy).
    SELECT coalesce(array_agg(l.id), '{}') INTO v_locked
    FROM (
        SELECT t.id
        FROM worker_tasks t
        WHERE t.id = ANY (heartbeat_tasks.task_ids)
          AND t.worker_id = heartbeat_tasks.worker_id
          AND t.status IN ('claimed', 'running')
        ORDER BY t.id
        FOR NO KEY UPDATE SKIP LOCKED
    ) l;

    RETURN QUERY
    WITH given AS (
        SELECT g.id, g.attempt, g.claim_token, g.n
        FROM unnest(heartbeat_tasks.task_ids, heartbeat_tasks.attempts, heartbeat_tasks.claim_tokens)
             WITH ORDINALITY AS g(id, attempt, claim_token, n)
    ),
    beaten AS (
        UPDATE worker_tasks t
        SET last_heartbeat_at = taskpool_now()
        FROM given
        WHERE t.id = given.id
          AND t.id = ANY (v_locked)
          AND t.worker_id = heartbeat_tasks.worker_id
          AND t.attempt = given.attempt
          AND t.claim_token = given.claim_token
          AND t.status IN ('claimed', 'running')
        RETURNING t.id, t.cancel_requested_at
    )
    SELECT given.id,
        CASE
            WHEN beaten.id IS NOT NULL AND beaten.cancel_requested_at IS NULL THEN 'continue'
            WHEN beaten.id IS NOT NULL THEN 'cancel_requested'
            WHEN given.id <> ALL (v_locked)
                 AND EXISTS (SELECT FROM worker_tasks t
                             WHERE t.id = given.id AND t.worker_id = heartbeat_tasks.worker_id
                               AND t.attempt = given.attempt AND t.claim_token = given.claim_token
                               AND t.status IN ('claimed', 'running')) THEN 'busy'
            WHEN EXISTS (SELECT FROM worker_tasks t WHERE t.id = given.id) THEN 'lost'
            ELSE 'not_found'
        END
    FROM given
    LEFT JOIN beaten ON beaten.id = given.id
    ORDER BY given.n;
END;
$$;

REVOKE ALL ON FUNCTION heartbeat_tasks(text, bigint[], integer[], uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION heartbeat_tasks(text, bigint[], integer[], uuid[]) TO taskpool_worker;

COMMIT;
