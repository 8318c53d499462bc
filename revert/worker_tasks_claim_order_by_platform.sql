-- Revert taskpool:worker_tasks_claim_order_by_platform from pg

BEGIN;

DROP INDEX worker_tasks_claim_order_idx;
CREATE INDEX worker_tasks_claim_order_idx
    ON worker_tasks (role, priority DESC, created_at, id, scheduled_for)
    WHERE status = 'pending';
COMMENT ON INDEX worker_tasks_claim_order_idx IS
    'Serves claim_tasks: ready tasks of a role in priority DESC, created_at order.';

COMMIT;
