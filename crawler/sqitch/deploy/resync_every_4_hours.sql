-- Deploy taskpool_crawler:resync_every_4_hours to pg
-- requires: plan_product_resync
-- requires: taskpool:task_schedules_cadence

BEGIN;
SET client_min_messages = 'warning';

-- The seeds refresh every store every 4 hours. A per_store schedule does that: each active store
-- with no product_resync under way gets one 4 hours after its last completed one, and the stores
-- overdue are spread evenly over the 4 hours. The daily plan (generate_resync_tasks, one pass a
-- day in batches) stays, disabled: both on would crawl every store twice. A name already taken is
-- left alone.
INSERT INTO task_schedules (name, role, kind, every, priority, next_run_at)
VALUES ('resync_every_4_hours', 'product_resync', 'per_store', interval '4 hours', 0, taskpool_now())
ON CONFLICT (name) DO NOTHING;
UPDATE task_schedules SET enabled = false WHERE name = 'daily_resync_plan';

COMMIT;
