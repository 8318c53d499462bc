-- Deploy taskpool_crawler:crawler_schedules to pg
-- requires: crawler_roles
-- requires: taskpool:task_schedules
-- requires: taskpool:task_schedules_run_times_finite
-- requires: taskpool:tick_schedules

BEGIN;
SET client_min_messages = 'warning';

-- The crawler's default schedules: rows the core's task_schedules change seeded before the
-- crawler had a project of its own. A database deployed with the combined plan has them already
-- and keeps them as they are (an operator may have changed or disabled one since; one an operator
-- deleted comes back, as it would with a fresh deploy). The default schedules: store discovery
-- daily, the daily resync plan at midnight UTC (plan_product_resync, which the next change adds),
-- and analytics every six hours. All due at once, so the first tick after a deploy runs them. A name already taken (an upgraded database, or an
-- operator's own schedule) is left alone.
INSERT INTO task_schedules (name, role, kind, planner, interval_hours, priority, next_run_at) VALUES
    ('store_discovery',    'store_discovery',   'single',   NULL,                  24, 5, taskpool_now()),
    ('daily_resync_plan',  'product_resync',    'day_plan', 'plan_product_resync', 24, 0, date_trunc('day', taskpool_now(), 'UTC')),
    ('analytics_refresh',  'analytics_refresh', 'single',   NULL,                   6, 0, taskpool_now())
ON CONFLICT (name) DO NOTHING;

COMMIT;
