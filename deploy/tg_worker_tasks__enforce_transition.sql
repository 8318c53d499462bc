-- Deploy taskpool:tg_worker_tasks__enforce_transition to pg
-- requires: tg_worker_tasks__enforce_transition@v0.5.0
-- requires: tg_worker_tasks__touch_updated_at
-- requires: tg_worker_tasks__limit_idle_transaction
-- requires: task_status_transition_allowed
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__enforce_transition
-- The one BEFORE trigger of worker_tasks: a new task must be pending; a status change must be a
-- row of task_status_transitions, and gets what it implies; every change stamps updated_at; a
-- change to an active task limits how long its transaction may idle; and every row written obeys
-- the row rules, which were CHECK constraints up to v0.5.0 and keep their names.
--
-- It was three row triggers (_100_touch_updated_at, _300_limit_idle_transaction and this one):
-- three PL/pgSQL calls per updated row, and a WHEN clause that the executor parsed from its
-- stored text on every UPDATE statement. Measured with perf on the SQL cycle (claim, complete),
-- the BEFORE triggers took 15 % of the server's CPU and the parsing of trigger WHEN clauses and
-- CHECK constraints another 13 %. One call, no WHEN clause, the same rules for every writer; the
-- transition is checked against the table compiled into an expression, not by a query per row.
--
-- The row rules moved here from ten CHECK constraints because PostgreSQL parses a table's CHECK
-- constraints from their stored text (about 11 kB for these ten) at the start of every INSERT and
-- UPDATE statement: perf of one backend running claim_and_start_tasks + complete_task found
-- ExecConstraints at 22 % of its CPU, nearly all of it that parsing. Here they are one CASE
-- expression that PL/pgSQL prepares once per transaction, and a batch pays nothing per row that
-- it did not pay before. They still bind every writer, the owner's direct INSERT and UPDATE
-- included; a violation raises what the constraint raised (23514, the same message, the
-- constraint's name in the error's CONSTRAINT field). Only the table's owner can get past them,
-- by disabling this trigger, as the owner could drop a constraint.
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
    v_broken_rule    text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' THEN
            RAISE EXCEPTION USING
                ERRCODE = '23514',
                MESSAGE = format('a new task must be pending, not %s', NEW.status),
                HINT = 'Enqueue it with enqueue_task; workers move it on.';
        END IF;
    ELSE
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
            -- in the pool belongs to nobody (its attempt is kept by _600_after_status_change), and a
            -- finished task says when it finished.
            IF NEW.status = 'pending' THEN
                NEW.worker_id := NULL;
                NEW.claim_token := NULL;
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
    END IF;

    -- The row rules, on the row as written (after the stamps above), in the order PostgreSQL
    -- checked them as constraints (by name). As with a CHECK, a rule that comes out NULL holds.
    v_broken_rule := CASE
        WHEN NOT (NEW.status NOT IN ('claimed', 'running')
                  OR (NEW.worker_id IS NOT NULL AND NEW.attempt > 0 AND NEW.claim_token IS NOT NULL
                      AND NEW.claimed_at IS NOT NULL AND NEW.last_heartbeat_at IS NOT NULL))
            THEN 'worker_tasks_active_is_owned'
        WHEN NOT (NEW.attempt >= 0)
            THEN 'worker_tasks_attempt_not_negative'
        WHEN NOT ((NEW.completed_at IS NOT NULL) = (NEW.status IN ('completed', 'failed', 'cancelled')))
            THEN 'worker_tasks_completed_at_iff_finished'
        WHEN NOT (length(NEW.dedupe_key) BETWEEN 1 AND 255)
            THEN 'worker_tasks_dedupe_key_length'
        WHEN NOT (jsonb_typeof(NEW.payload) = 'object')
            THEN 'worker_tasks_payload_is_object'
        WHEN NOT (NEW.status <> 'pending'
                  OR (NEW.worker_id IS NULL AND NEW.claim_token IS NULL AND NEW.claimed_at IS NULL
                      AND NEW.started_at IS NULL
                      AND NEW.last_heartbeat_at IS NULL AND NEW.cancel_requested_at IS NULL
                      AND NEW.completed_at IS NULL))
            THEN 'worker_tasks_pending_is_unowned'
        WHEN NOT (NEW.priority BETWEEN -100 AND 100)
            THEN 'worker_tasks_priority_in_range'
        WHEN NOT (NEW.max_retries >= 0 AND NEW.retry_count >= 0 AND NEW.retry_count <= NEW.max_retries)
            THEN 'worker_tasks_retries_within_budget'
        WHEN NOT (NEW.status <> 'running' OR NEW.started_at IS NOT NULL)
            THEN 'worker_tasks_running_is_started'
        WHEN NOT (NEW.status IN ('pending', 'claimed', 'running', 'completed', 'failed', 'cancelled'))
            THEN 'worker_tasks_status_known'
    END;
    IF v_broken_rule IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '23514',
            MESSAGE = format('new row for relation "worker_tasks" violates check constraint "%s"', v_broken_rule),
            DETAIL = CASE v_broken_rule
                WHEN 'worker_tasks_active_is_owned' THEN
                    'A claimed or running task has a worker_id, an attempt above 0, claimed_at and last_heartbeat_at.'
                WHEN 'worker_tasks_attempt_not_negative' THEN 'attempt is 0 or more.'
                WHEN 'worker_tasks_completed_at_iff_finished' THEN
                    'completed_at is set exactly when the task is completed, failed or cancelled.'
                WHEN 'worker_tasks_dedupe_key_length' THEN 'A dedupe_key has 1 to 255 characters.'
                WHEN 'worker_tasks_payload_is_object' THEN 'payload is a JSON object.'
                WHEN 'worker_tasks_pending_is_unowned' THEN
                    'A pending task has no worker_id, claimed_at, started_at, last_heartbeat_at, cancel_requested_at or completed_at.'
                WHEN 'worker_tasks_priority_in_range' THEN 'priority is from -100 to 100.'
                WHEN 'worker_tasks_retries_within_budget' THEN
                    'max_retries is 0 or more, and retry_count from 0 to max_retries.'
                WHEN 'worker_tasks_running_is_started' THEN 'A running task has started_at.'
                ELSE 'status is pending, claimed, running, completed, failed or cancelled.'
            END,
            SCHEMA = 'public', TABLE = 'worker_tasks', CONSTRAINT = v_broken_rule;
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

-- The row rules are enforced above now.
ALTER TABLE worker_tasks
    DROP CONSTRAINT worker_tasks_active_is_owned,
    DROP CONSTRAINT worker_tasks_attempt_not_negative,
    DROP CONSTRAINT worker_tasks_completed_at_iff_finished,
    DROP CONSTRAINT worker_tasks_dedupe_key_length,
    DROP CONSTRAINT worker_tasks_payload_is_object,
    DROP CONSTRAINT worker_tasks_pending_is_unowned,
    DROP CONSTRAINT worker_tasks_priority_in_range,
    DROP CONSTRAINT worker_tasks_retries_within_budget,
    DROP CONSTRAINT worker_tasks_running_is_started,
    DROP CONSTRAINT worker_tasks_status_known;

COMMIT;
