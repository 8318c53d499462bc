-- Verify taskpool:worker_tasks_claim_order_by_platform on pg

BEGIN;

SELECT 1 / (pg_get_indexdef('worker_tasks_claim_order_idx'::regclass)
            LIKE '%(role, COALESCE(platform, ''''::text), COALESCE((headers ->> ''concurrency_key''::text), ''''::text), priority DESC, created_at, id, scheduled_for)%')::integer;

ROLLBACK;
