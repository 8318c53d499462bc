-- Deploy taskpool:tg_worker_tasks__enforce_transition to pg
-- requires: tg_worker_tasks__enforce_transition@v0.5.0
-- requires: tg_worker_tasks__touch_updated_at
-- requires: tg_worker_tasks__limit_idle_transaction
-- requires: task_status_transition_allowed

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__enforce_transition
-- The one BEFORE trigger of worker_tasks: a new task must be pending; a status change must be a
-- row of task_status_transitions, and gets what it implies; every change stamps updated_at; a
-- change to an active task limits how long its transaction may idle.
--
-- It was three row triggers (_100_touch_updated_at, _300_limit_idle_transaction and this one):
-- three PL/pgSQL calls per updated row, and a WHEN clause that the executor parsed from its
-- stored text on every UPDATE statement. Measured with perf on the SQL cycle (claim, complete),
-- the BEFORE triggers took 15 % of the server's CPU and the parsing of trigger WHEN clauses and
-- CHECK constraints another 13 %. One call, no WHEN clause, the same rules for every writer; the
-- transition is checked against the table compiled into an expression, not by a query per row.
CREATE OR REPLACE FUNCTION tg_worker_tasks__enforce_transition()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    -- idle_in_transaction_session_timeout holds at most 2147483647 ms (about 24.8 days): a
    -- longer stale threshold is capped there, as setting more would raise.
    c_max_timeout_ms constant numeric := 2147483647;
    v_allowed        text;
    v_threshold      interval;
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

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        -- task_status_transitions compiled (task_status_transition_allowed): no query per row
        IF NOT _task_status_transition_allowed(OLD.status, NEW.status) THEN
            SELECT string_agg(s.to_status, ', ' ORDER BY s.to_status) INTO v_allowed
            FROM task_status_transitions s
            WHERE s.from_status = OLD.status;
            RAISE EXCEPTION USING
                ERRCODE = '23514',
                MESSAGE = format('illegal status transition for task %s: %s -> %s', OLD.id, OLD.status, NEW.status),
                HINT = format('From %s a task may go to: %s.', OLD.status, coalesce(v_allowed, 'nothing, it is final'));
        END IF;

        -- Done here rather than in each function, so that no caller can forget it: a task back
        -- in the pool belongs to nobody (its attempt is kept by _600_record_attempt), and a
        -- finished task says when it finished.
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
    END IF;

    -- Every change to a task, whoever makes it.
    NEW.updated_at := taskpool_now();

    -- A worker that calls claim_task, start_task, heartbeat_task or complete_task inside an
    -- explicit transaction and then goes silent holds the task's row lock (after a claim, its
    -- store's advisory lock too) until that transaction ends; other claimers and
    -- recover_stale_tasks skip the row. A change to an active task therefore sets
    -- idle_in_transaction_session_timeout to the role's stale threshold for the rest of the
    -- transaction (set_config(..., true), i.e. SET LOCAL; a function's own SET clauses do not
    -- undo it): idle that long inside the transaction, the session is ended by the server, the
    -- transaction rolls back, and the task goes back to the pool or to stale recovery.
    -- Autocommit calls never idle inside a transaction and are not affected. An idle timeout
    -- already in force is kept, so only the first active task a transaction changes looks up
    -- its role (a batch claim or completion pays it once, not per row).
    IF (OLD.status IN ('claimed', 'running') OR NEW.status IN ('claimed', 'running'))
       AND current_setting('idle_in_transaction_session_timeout') = '0' THEN
        SELECT r.stale_threshold INTO v_threshold FROM task_roles r WHERE r.role = NEW.role;
        IF v_threshold IS NOT NULL THEN
            PERFORM set_config('idle_in_transaction_session_timeout',
                               least(ceil(extract(epoch FROM v_threshold) * 1000), c_max_timeout_ms)::bigint::text,
                               true);
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

-- Every UPDATE now, not only those that set status: updated_at is stamped here.
DROP TRIGGER _500_enforce_transition ON worker_tasks;
CREATE TRIGGER _500_enforce_transition
    BEFORE INSERT OR UPDATE ON worker_tasks
    FOR EACH ROW EXECUTE FUNCTION tg_worker_tasks__enforce_transition();

-- Their work is done above. Their functions stay, fired by nothing, until their changes are
-- reverted.
DROP TRIGGER _100_touch_updated_at ON worker_tasks;
DROP TRIGGER _300_limit_idle_transaction ON worker_tasks;

COMMIT;
