-- schedules_hostile: what hostile days and time zones do to the crawler's resync
-- planning, which a day_plan schedule of plan_product_resync runs (issue 11, items 8, 11 and 17): an unknown time
-- zone is the schedule's error, a daily plan runs at local midnight across daylight-saving changes,
-- a day generate_resync_tasks cannot plan is refused with 22023. (The core's part, schedules and
-- the idle-transaction guard, is sql_tests/schedules_hostile.sql.)
BEGIN;
SELECT plan(13);

-- What a rejected call must leave as it was (tests.rejects' tables).
\set written_tables '''{task_schedules, worker_tasks, resync_plan_entries}'''

-- pg_temp.ny_midnight: local midnight of a day in America/New_York.
CREATE FUNCTION pg_temp.ny_midnight(day date)
RETURNS timestamptz
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT ny_midnight.day::timestamp AT TIME ZONE 'America/New_York';
$$;

-- Only this file's schedules and stores are live (this rolls back).
UPDATE task_schedules SET enabled = false WHERE enabled;
UPDATE dispensaries SET active = false WHERE active;

/****************************************************************************/
-- Item 8: a resync plan whose time zone is unknown records its error; the tick goes on

INSERT INTO task_schedules (name, role, kind, planner, interval_hours, batches, time_zone, next_run_at) VALUES
    ('t26_bad_zone', 'product_resync', 'day_plan', 'plan_product_resync', 24, 6, 'Mars/Olympus', now() - interval '2 minutes');

SELECT lives_ok($$SELECT tick_schedules()$$,
    'Should tick through a schedule whose time zone is unknown');
SELECT results_eq(
    $$SELECT last_task_count, last_error, next_run_at FROM task_schedules WHERE name = 't26_bad_zone'$$,
    $$VALUES (0, 'time zone "Mars/Olympus" not recognized'::text, now() + interval '10 minutes')$$,
    'Should record an unknown time zone as the resync plan''s error');

/****************************************************************************/
-- Item 17: days generate_resync_tasks cannot plan

SELECT tests.make_store(name := 't26 store') AS store \gset
SELECT tests.rejects($$SELECT generate_resync_tasks(6, 'infinity')$$,
    '22023', 'day infinity is out of range', 'an infinite day',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(6, '-infinity', 'UTC')$$,
    '22023', 'day -infinity is out of range', 'a day of -infinity',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(6, '5874897-12-31', 'UTC')$$,
    '22023', 'day 5874897-12-31 is out of range', 'a day past the timestamp range',
    tables := :written_tables);
SELECT tests.rejects($$SELECT generate_resync_tasks(6, '10000-01-01', 'Pacific/Kiritimati')$$,
    '22023', 'day 10000-01-01 is out of range', 'a day after 9999-12-31',
    tables := :written_tables);
SELECT is(generate_resync_tasks(6, '9999-12-31', 'Etc/GMT+12'), 1,
    'Should plan the last day, in the time zone furthest behind UTC');
SELECT cancel_task(id) FROM worker_tasks WHERE role = 'product_resync' AND dispensary_id = :store;
SELECT is(generate_resync_tasks(6, '0001-01-01', 'Pacific/Kiritimati'), 1,
    'Should plan the first day, in the time zone furthest ahead of UTC');

/****************************************************************************/
-- Item 11: a day_plan schedule of plan_product_resync moves on to local midnight of its time zone

-- Planned last on a day of summer time and on one of standard time: whichever the offset of
-- tomorrow, one of them crosses a daylight-saving change before its next run.
INSERT INTO task_schedules (name, role, kind, planner, interval_hours, batches, time_zone, next_run_at) VALUES
    ('t26_plan_summer', 'product_resync', 'day_plan', 'plan_product_resync', 24, 6, 'America/New_York', pg_temp.ny_midnight('2025-07-01')),
    ('t26_plan_winter', 'product_resync', 'day_plan', 'plan_product_resync', 24, 6, 'America/New_York', pg_temp.ny_midnight('2025-12-01'));
SELECT tick_schedules();
SELECT results_eq(
    $$SELECT name, last_error, next_run_at FROM task_schedules WHERE name LIKE 't26_plan_%' ORDER BY name$$,
    $$VALUES ('t26_plan_summer'::text, NULL::text, pg_temp.ny_midnight((now() AT TIME ZONE 'America/New_York')::date + 1)),
             ('t26_plan_winter', NULL, pg_temp.ny_midnight((now() AT TIME ZONE 'America/New_York')::date + 1))$$,
    'Should move a daily resync plan to the next local midnight, whatever the offset when it last ran');

SELECT * FROM finish();
ROLLBACK;
