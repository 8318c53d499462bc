-- schedules: the crawler's default schedules (crawler_schedules), and the planner
-- its day_plan schedule names, plan_product_resync (generate_resync_tasks for the day). (The schedules themselves, the tick and the
-- operator's handles are the core's: sql_tests/schedules.sql.)
BEGIN;
SELECT plan(6);

-- The default schedules.
SELECT results_eq(
    $$SELECT name, role, kind, planner, interval_hours, priority, state_code, payload, batches, time_zone
      FROM task_schedules
      WHERE name IN ('store_discovery', 'daily_resync_plan', 'resync_every_4_hours', 'analytics_refresh')
      ORDER BY name$$,
    $$VALUES ('analytics_refresh'::text, 'analytics_refresh'::text, 'single'::text, NULL::text, 6, 0, NULL::text, '{}'::jsonb, 6, 'UTC'::text),
             ('daily_resync_plan', 'product_resync', 'day_plan', 'plan_product_resync', 24, 0, NULL, '{}', 6, 'UTC'),
             ('resync_every_4_hours', 'product_resync', 'per_store', NULL, 4, 0, NULL, '{}', 6, 'UTC'),
             ('store_discovery', 'store_discovery', 'single', NULL, 24, 5, NULL, '{}', 6, 'UTC')$$,
    'Should ship store discovery daily at priority 5, a resync of every store every 4 hours, the daily resync plan and analytics every 6 hours');
SELECT results_eq(
    $$SELECT name, enabled FROM task_schedules WHERE role = 'product_resync' ORDER BY name$$,
    $$VALUES ('daily_resync_plan'::text, false), ('resync_every_4_hours', true)$$,
    'Should run the 4-hourly resync and keep the daily plan disabled, so that no store is crawled twice');

/****************************************************************************/
-- Fixtures: only this file's schedules and stores are live (this rolls back)

UPDATE task_schedules SET enabled = false WHERE enabled;
UPDATE dispensaries SET active = false WHERE active;
INSERT INTO task_schedules (name, role, kind, planner, interval_hours, priority, batches, time_zone, enabled, next_run_at) VALUES
    ('t12_plan', 'product_resync', 'day_plan', 'plan_product_resync', 24, 7, 4, 'America/New_York', false, now() - interval '1 hour');

SELECT tick_schedules() AS report \gset
SELECT is_empty(
    $$SELECT name FROM task_schedules
      WHERE name IN ('store_discovery', 'daily_resync_plan', 'analytics_refresh') AND last_run_at IS NOT NULL$$,
    'Should leave the disabled default schedules alone');

-- A day_plan schedule of plan_product_resync: today in its time zone, its batches and priority.
INSERT INTO tests.fx (name, id) VALUES
    ('plan_1', tests.make_store(name := 't12 plan 1')),
    ('plan_2', tests.make_store(name := 't12 plan 2'));
SELECT is((SELECT last_task_count FROM trigger_schedule('t12_plan')), 2,
    'Should plan one product_resync per active store from a day_plan schedule of plan_product_resync');
SELECT results_eq(
    $$SELECT f.name, e.day, e.slot, e.scheduled_for, t.priority
      FROM resync_plan_entries e
      JOIN tests.fx f ON f.id = e.dispensary_id
      JOIN worker_tasks t ON t.id = e.task_id
      ORDER BY f.name$$,
    $$SELECT v.name, (now() AT TIME ZONE 'America/New_York')::date, v.slot,
             ((now() AT TIME ZONE 'America/New_York')::date + v.slot * interval '6 hours') AT TIME ZONE 'America/New_York',
             7
      FROM (VALUES ('plan_1'::text, 0), ('plan_2', 1)) AS v(name, slot)
      ORDER BY v.name$$,
    'Should plan today in the schedule''s time zone, in its batches (4: every 6 hours) at its priority');

SELECT function_privs_are('public', 'plan_product_resync', ARRAY['task_schedules', 'date'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute plan_product_resync');

SELECT * FROM finish();

ROLLBACK;
