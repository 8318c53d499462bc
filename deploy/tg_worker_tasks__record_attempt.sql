-- Deploy taskpool:tg_worker_tasks__record_attempt to pg
-- requires: worker_tasks
-- requires: worker_task_attempts

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__record_attempt
-- Keeps the attempt a task leaves without completing (worker, times, outcome, error) in worker_task_attempts.
CREATE FUNCTION tg_worker_tasks__record_attempt()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO worker_task_attempts (
        task_id, attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at,
        outcome, error_message)
    VALUES (
        OLD.id, OLD.attempt, OLD.worker_id, OLD.claimed_at, OLD.started_at, OLD.last_heartbeat_at,
        taskpool_now(),
        CASE
            WHEN NEW.status <> 'pending' THEN NEW.status
            WHEN NEW.retry_count > OLD.retry_count THEN 'retried'
            ELSE 'released'
        END,
        NEW.error_message);
    RETURN NULL;
END;
$$;

-- Completions are not recorded: the completed task row is that attempt's record, and the hot
-- path stays one write.
CREATE TRIGGER _600_record_attempt
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('claimed', 'running') AND NEW.status IN ('pending', 'failed', 'cancelled'))
    EXECUTE FUNCTION tg_worker_tasks__record_attempt();

REVOKE ALL ON FUNCTION tg_worker_tasks__record_attempt() FROM PUBLIC;

COMMIT;
