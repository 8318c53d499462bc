-- Revert taskpool:tg_worker_tasks__after_status_change from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the four AFTER triggers, each with its own WHEN clause, as in v0.5.0.
DROP TRIGGER _600_after_status_change ON worker_tasks;
DROP FUNCTION tg_worker_tasks__after_status_change();

CREATE TRIGGER _600_record_attempt
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('claimed', 'running') AND NEW.status IN ('pending', 'failed', 'cancelled'))
    EXECUTE FUNCTION tg_worker_tasks__record_attempt();

CREATE TRIGGER _700_chain_follow_ups
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (NEW.status = 'completed' AND OLD.status <> 'completed' AND jsonb_typeof(NEW.result) = 'object')
    EXECUTE FUNCTION tg_worker_tasks__chain_follow_ups();

CREATE TRIGGER _900_notify_requeued
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (NEW.status = 'pending' AND OLD.status <> 'pending')
    EXECUTE FUNCTION tg_worker_tasks__notify_requeued();

CREATE TRIGGER _900_wake_for_freed_store
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('claimed', 'running') AND NEW.status NOT IN ('claimed', 'running')
          AND NEW.dispensary_id IS NOT NULL)
    EXECUTE FUNCTION tg_worker_tasks__wake_for_freed_store();

COMMIT;
