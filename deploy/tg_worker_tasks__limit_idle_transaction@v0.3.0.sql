-- Deploy taskpool:tg_worker_tasks__limit_idle_transaction to pg
-- requires: worker_tasks
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__limit_idle_transaction
-- Ends a session that idles inside a transaction holding a worker's task longer than the task's stale threshold.
CREATE FUNCTION tg_worker_tasks__limit_idle_transaction()
RETURNS trigger
LANGUAGE plpgsql
AS $$
-- A worker that calls claim_task, start_task, heartbeat_task or complete_task inside an explicit
-- transaction and then goes silent holds the task's row lock (after a claim, its store's
-- advisory lock too) until that transaction ends. Other claimers skip the row, and
-- recover_stale_tasks skips it as a row a live worker is touching, so the task would stay held
-- for as long as the session lives. Here, a change to an active task sets
-- idle_in_transaction_session_timeout to the role's stale threshold for the rest of the
-- transaction (set_config(..., true), i.e. SET LOCAL; a function's own SET clauses do not undo
-- it): idle that long inside the transaction, the session is ended by the server, the
-- transaction rolls back, and the task goes back to the pool or to stale recovery. Autocommit
-- calls (pyworker's) never idle inside a transaction and are not affected. An idle timeout
-- already in force is kept: the trigger's WHEN tests that in C, so only the first active task a
-- transaction changes runs this function (a batch claim or completion pays it once, not per row).
DECLARE
    v_threshold interval;
BEGIN
    SELECT r.stale_threshold INTO v_threshold FROM task_roles r WHERE r.role = NEW.role;
    IF v_threshold IS NOT NULL THEN
        PERFORM set_config('idle_in_transaction_session_timeout',
                           ceil(extract(epoch FROM v_threshold) * 1000)::bigint::text, true);
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER _300_limit_idle_transaction
    BEFORE UPDATE ON worker_tasks
    FOR EACH ROW
    WHEN ((OLD.status IN ('claimed', 'running') OR NEW.status IN ('claimed', 'running'))
          AND current_setting('idle_in_transaction_session_timeout') = '0')
    EXECUTE FUNCTION tg_worker_tasks__limit_idle_transaction();

REVOKE ALL ON FUNCTION tg_worker_tasks__limit_idle_transaction() FROM PUBLIC;

COMMIT;
