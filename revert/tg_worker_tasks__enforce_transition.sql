-- Revert taskpool:tg_worker_tasks__enforce_transition from pg

BEGIN;
SET client_min_messages = 'warning';

-- The row rules back as the CHECK constraints of v0.5.0.
ALTER TABLE worker_tasks
    ADD CONSTRAINT worker_tasks_active_is_owned
        CHECK (status NOT IN ('claimed', 'running')
               OR (worker_id IS NOT NULL AND attempt > 0 AND claimed_at IS NOT NULL AND last_heartbeat_at IS NOT NULL)),
    ADD CONSTRAINT worker_tasks_attempt_not_negative CHECK (attempt >= 0),
    ADD CONSTRAINT worker_tasks_completed_at_iff_finished
        CHECK ((completed_at IS NOT NULL) = (status IN ('completed', 'failed', 'cancelled'))),
    ADD CONSTRAINT worker_tasks_dedupe_key_length CHECK (length(dedupe_key) >= 1 AND length(dedupe_key) <= 255),
    ADD CONSTRAINT worker_tasks_payload_is_object CHECK (jsonb_typeof(payload) = 'object'),
    ADD CONSTRAINT worker_tasks_pending_is_unowned
        CHECK (status <> 'pending'
               OR (worker_id IS NULL AND claimed_at IS NULL AND started_at IS NULL AND last_heartbeat_at IS NULL
                   AND cancel_requested_at IS NULL AND completed_at IS NULL)),
    ADD CONSTRAINT worker_tasks_priority_in_range CHECK (priority >= -100 AND priority <= 100),
    ADD CONSTRAINT worker_tasks_retries_within_budget
        CHECK (max_retries >= 0 AND retry_count >= 0 AND retry_count <= max_retries),
    ADD CONSTRAINT worker_tasks_running_is_started CHECK (status <> 'running' OR started_at IS NOT NULL),
    ADD CONSTRAINT worker_tasks_status_known
        CHECK (status IN ('pending', 'claimed', 'running', 'completed', 'failed', 'cancelled'));

-- Back to three BEFORE triggers, as in v0.5.0.

CREATE TRIGGER _100_touch_updated_at
    BEFORE UPDATE ON worker_tasks
    FOR EACH ROW EXECUTE FUNCTION tg_worker_tasks__touch_updated_at();

CREATE TRIGGER _300_limit_idle_transaction
    BEFORE UPDATE ON worker_tasks
    FOR EACH ROW
    WHEN ((OLD.status IN ('claimed', 'running') OR NEW.status IN ('claimed', 'running'))
          AND current_setting('idle_in_transaction_session_timeout') = '0')
    EXECUTE FUNCTION tg_worker_tasks__limit_idle_transaction();

DROP TRIGGER _500_enforce_transition ON worker_tasks;
CREATE TRIGGER _500_enforce_transition
    BEFORE INSERT OR UPDATE OF status ON worker_tasks
    FOR EACH ROW EXECUTE FUNCTION tg_worker_tasks__enforce_transition();

CREATE OR REPLACE FUNCTION tg_worker_tasks__enforce_transition()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_allowed text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' THEN
            RAISE EXCEPTION USING
                ERRCODE = '23514',
                MESSAGE = format('a new task must be pending, not %s', NEW.status),
                HINT = 'Enqueue it with enqueue_task; workers move it on.';
        END IF;
        RETURN NEW;
    END IF;

    IF NEW.status = OLD.status THEN
        RETURN NEW;
    END IF;

    PERFORM FROM task_status_transitions s
    WHERE s.from_status = OLD.status AND s.to_status = NEW.status;
    IF NOT FOUND THEN
        SELECT string_agg(s.to_status, ', ' ORDER BY s.to_status) INTO v_allowed
        FROM task_status_transitions s
        WHERE s.from_status = OLD.status;
        RAISE EXCEPTION USING
            ERRCODE = '23514',
            MESSAGE = format('illegal status transition for task %s: %s -> %s', OLD.id, OLD.status, NEW.status),
            HINT = format('From %s a task may go to: %s.', OLD.status, coalesce(v_allowed, 'nothing, it is final'));
    END IF;

    -- Done here rather than in each function, so that no caller can forget it: a task back in
    -- the pool belongs to nobody (its attempt is kept by _600_record_attempt), and a finished
    -- task says when it finished.
    IF NEW.status = 'pending' THEN
        NEW.worker_id := NULL;
        NEW.claimed_at := NULL;
        NEW.started_at := NULL;
        NEW.last_heartbeat_at := NULL;
        NEW.cancel_requested_at := NULL;
        NEW.completed_at := NULL;
    ELSIF NEW.status IN ('completed', 'failed', 'cancelled') THEN
        NEW.completed_at := taskpool_now();
    END IF;
    RETURN NEW;
END;
$$;

COMMIT;
