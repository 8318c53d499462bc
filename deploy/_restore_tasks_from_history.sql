-- Deploy taskpool:_restore_tasks_from_history to pg
-- requires: worker_task_history
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- _restore_tasks_from_history
-- Puts the given failed or cancelled tasks of worker_task_history back into worker_tasks as pending now, with a fresh retry budget and their attempts: retry_task and retry_tasks for a task that moved. Returns them as they are now.
CREATE FUNCTION _restore_tasks_from_history(task_ids bigint[])
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
AS $$
-- The task keeps its id, so its pages, waiters and follow-ups find it again. It enters
-- worker_tasks as a pending task does (the enqueue's NOTIFY and change stream fire); what a
-- retry in place would clear (its worker, claim and finish) is cleared. A task held by another
-- transaction is waited for. A unique violation (another active task holds its dedupe key)
-- leaves everything as it was, as the statement fails.
BEGIN
    RETURN QUERY
    WITH
    taken AS (
        DELETE FROM worker_task_history h
        WHERE h.id = ANY (_restore_tasks_from_history.task_ids) AND h.status IN ('failed', 'cancelled')
        RETURNING h.*
    ),
    attempts AS (
        DELETE FROM worker_task_attempt_history a
        USING taken t
        WHERE a.task_id = t.id
        RETURNING a.*
    ),
    attempts_back AS (
        INSERT INTO worker_task_attempts
        SELECT (jsonb_populate_record(NULL::worker_task_attempts, to_jsonb(a))).*
        FROM attempts a
    ),
    uncounted AS (
        UPDATE task_history_counts c
        SET tasks = c.tasks - g.tasks
        FROM (SELECT (t.completed_at AT TIME ZONE 'UTC')::date AS day, t.status, t.role, count(*) AS tasks
              FROM taken t GROUP BY 1, 2, 3) g
        WHERE (c.day, c.status, c.role) = (g.day, g.status, g.role)
    )
    INSERT INTO worker_tasks OVERRIDING SYSTEM VALUE
    SELECT (jsonb_populate_record(NULL::worker_tasks, to_jsonb(t) || jsonb_build_object(
                'status', 'pending', 'retry_count', 0, 'scheduled_for', taskpool_now(),
                'updated_at', taskpool_now(), 'worker_id', NULL, 'claim_token', NULL, 'claimed_at', NULL,
                'started_at', NULL, 'last_heartbeat_at', NULL, 'cancel_requested_at', NULL,
                'completed_at', NULL))).*
    FROM taken t
    RETURNING *;
END;
$$;

REVOKE ALL ON FUNCTION _restore_tasks_from_history(bigint[]) FROM PUBLIC;

COMMIT;
