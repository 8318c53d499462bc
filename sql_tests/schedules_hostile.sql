-- schedules_hostile: what hostile values do to schedules and the idle-transaction guard
-- (issue 11, items 8, 9 and 11): an infinite run time is refused, and one bad schedule no longer
-- stops the tick; a long stale threshold no longer makes a role unclaimable; a day_plan
-- schedule's next run is at local midnight across daylight-saving changes. (What the crawler's
-- generate_resync_tasks, which a day_plan schedule runs, does with hostile days and time zones
-- is crawler/sql_tests/schedules_hostile.sql.)
BEGIN;
SELECT plan(25);

-- What a rejected call must leave as it was (tests.rejects' tables).
\set written_tables '''{task_schedules, worker_tasks}'''

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

INSERT INTO task_roles (role, description, requires_store, stale_threshold) VALUES
    ('t26_single', 'pgTAP schedules_hostile: single schedules', false, '10 minutes'),
    ('t26_month',  'pgTAP schedules_hostile: a stale threshold of 30 days', false, '30 days');

/****************************************************************************/
-- Item 8: infinite run times are refused where schedules are written

INSERT INTO task_schedules (name, role, kind, interval_hours, payload, next_run_at) VALUES
    ('t26_good', 't26_single', 'single', 6, '{"s": "good"}', now() - interval '1 minute');

SELECT tests.rejects($$UPDATE task_schedules SET next_run_at = '-infinity' WHERE name = 't26_good'$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_run_times_finite"',
    'a next_run_at of -infinity',
    tables := :written_tables);
SELECT tests.rejects($$UPDATE task_schedules SET next_run_at = 'infinity' WHERE name = 't26_good'$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_run_times_finite"',
    'a next_run_at of infinity',
    tables := :written_tables);
SELECT tests.rejects(
    $$INSERT INTO task_schedules (name, role, interval_hours, last_run_at) VALUES ('t26_x', 't26_single', 1, 'infinity')$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_run_times_finite"',
    'a last_run_at of infinity',
    tables := :written_tables);

-- A row written before that constraint existed: the bad schedule records its error, the rest run.
ALTER TABLE task_schedules DROP CONSTRAINT IF EXISTS task_schedules_run_times_finite;
INSERT INTO task_schedules (name, role, kind, interval_hours, payload, next_run_at) VALUES
    ('t26_minus_infinity', 't26_single', 'single', 6, '{"s": "minus infinity"}', '-infinity');

SELECT lives_ok($$SELECT tick_schedules()$$,
    'Should tick through a schedule whose next_run_at is -infinity');
SELECT results_eq(
    $$SELECT last_run_at, last_task_count, last_error, next_run_at FROM task_schedules WHERE name = 't26_good'$$,
    $$VALUES (now(), 1, NULL::text, now() - interval '1 minute' + interval '6 hours')$$,
    'Should run the good schedule due in the same tick');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't26_single' AND payload = '{"s": "good"}'), 1::bigint,
    'Should create the good schedule''s task');
SELECT results_eq(
    $$SELECT last_run_at, last_task_count, last_error IS NOT NULL, next_run_at
      FROM task_schedules WHERE name = 't26_minus_infinity'$$,
    $$VALUES (now(), 0, true, now() + interval '10 minutes')$$,
    'Should record the -infinity schedule''s error and retry it in 10 minutes, a finite time');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't26_single' AND payload = '{"s": "minus infinity"}'), 0::bigint,
    'Should keep no task of a run that failed');

-- Its retry comes: it runs, on a cadence counted from that finite time.
UPDATE task_schedules SET next_run_at = now() - interval '1 minute' WHERE name = 't26_minus_infinity';
SELECT tick_schedules();
SELECT results_eq(
    $$SELECT last_task_count, last_error, next_run_at FROM task_schedules WHERE name = 't26_minus_infinity'$$,
    $$VALUES (1, NULL::text, now() - interval '1 minute' + interval '6 hours')$$,
    'Should run the repaired schedule on its cadence');

/****************************************************************************/
-- Item 9: a stale threshold past what idle_in_transaction_session_timeout can hold

SET LOCAL idle_in_transaction_session_timeout = 0;
SELECT tests.make_task(role := 't26_month') AS month_task \gset
SELECT lives_ok($$SELECT claim_task('t26_month', 't26-w1')$$,
    'Should claim a task of a role whose stale threshold is 30 days');
SELECT is((SELECT status FROM worker_tasks WHERE id = :month_task), 'claimed',
    'Should have claimed it');
SELECT is(current_setting('idle_in_transaction_session_timeout'), '2147483647ms',
    'Should cap the idle-in-transaction timeout at its largest value (about 24.8 days)');

SELECT throws_ok($$UPDATE task_roles SET stale_threshold = '400 days' WHERE role = 't26_month'$$,
    '23514', 'new row for relation "task_roles" violates check constraint "task_roles_stale_threshold_at_most_a_year"',
    'Should refuse a stale threshold over a year, which stale recovery cannot subtract from now');
SELECT lives_ok($$UPDATE task_roles SET stale_threshold = '1 year' WHERE role = 't26_month'$$,
    'Should accept a stale threshold of a year');

/****************************************************************************/
-- Item 11: a day_plan schedule moves on to local midnight of its time zone

-- Planned last on a day of summer time and on one of standard time: whichever the offset of
-- tomorrow, one of them crosses a daylight-saving change before its next run.
-- Their planner: these tests only move their next run.
CREATE FUNCTION tests.t26_plan_day(schedule task_schedules, day date) RETURNS integer LANGUAGE sql AS 'SELECT 0';
INSERT INTO task_schedules (name, role, kind, planner, interval_hours, batches, time_zone, next_run_at) VALUES
    ('t26_plan_summer', 'product_resync', 'day_plan', 'tests.t26_plan_day', 24, 6, 'America/New_York', pg_temp.ny_midnight('2025-07-01')),
    ('t26_plan_winter', 'product_resync', 'day_plan', 'tests.t26_plan_day', 24, 6, 'America/New_York', pg_temp.ny_midnight('2025-12-01'));

-- The next run after a given moment, around both changes of 2026 in New York.
UPDATE task_schedules SET next_run_at = pg_temp.ny_midnight('2026-10-31') WHERE name = 't26_plan_summer';
SELECT is(_schedule_next_run_at((SELECT s FROM task_schedules s WHERE name = 't26_plan_summer'),
                                pg_temp.ny_midnight('2026-11-01') + interval '30 seconds'),
    '2026-11-02 05:00:00+00'::timestamptz,
    'Should plan the day after the fall-back day at its local midnight (05:00 UTC), not at 23:00 the day before');
SELECT is(_schedule_next_run_at((SELECT s FROM task_schedules s WHERE name = 't26_plan_summer'),
                                '2026-11-02 04:30:00+00'),
    '2026-11-02 05:00:00+00'::timestamptz,
    'Should run at the first local midnight after a run late on the fall-back day');
SELECT is(_schedule_next_run_at((SELECT s FROM task_schedules s WHERE name = 't26_plan_summer'),
                                pg_temp.ny_midnight('2026-03-08') + interval '30 seconds'),
    '2026-03-09 04:00:00+00'::timestamptz,
    'Should plan the day after the spring-forward day at its local midnight (04:00 UTC)');
UPDATE task_schedules SET interval_hours = 48 WHERE name = 't26_plan_summer';
SELECT is(_schedule_next_run_at((SELECT s FROM task_schedules s WHERE name = 't26_plan_summer'),
                                pg_temp.ny_midnight('2026-11-03') + interval '5 hours'),
    pg_temp.ny_midnight('2026-11-04'),
    'Should keep a 48-hour day plan on its every-other-day cadence, at local midnight');
SELECT is(_schedule_next_run_at((SELECT s FROM task_schedules s WHERE name = 't26_plan_summer'),
                                pg_temp.ny_midnight('2026-11-04') + interval '5 hours'),
    pg_temp.ny_midnight('2026-11-06'),
    'Should skip the day off the cadence of a 48-hour day plan');
SELECT is(_schedule_next_run_at((SELECT s FROM task_schedules s WHERE name = 't26_good'),
                                now() + interval '7 hours'),
    now() - interval '1 minute' + interval '12 hours',
    'Should keep counting hours for a schedule that is not a day plan');

-- update_schedule moves a day plan's next run to a local midnight too.
-- Due at the next local midnight, where a tick puts it (crawler/sql_tests/schedules_hostile.sql).
UPDATE task_schedules SET next_run_at = pg_temp.ny_midnight((now() AT TIME ZONE 'America/New_York')::date + 1)
WHERE name = 't26_plan_winter';
SELECT is((SELECT next_run_at FROM update_schedule('t26_plan_winter', interval_hours := 48)) AT TIME ZONE 'America/New_York'
          - (SELECT (next_run_at AT TIME ZONE 'America/New_York')::date FROM task_schedules WHERE name = 't26_plan_winter'),
    interval '0',
    'Should put a day plan whose interval changes at a local midnight');
SELECT cmp_ok((SELECT next_run_at FROM task_schedules WHERE name = 't26_plan_winter'), '>', now(),
    'Should put it after now');

SELECT * FROM finish();
ROLLBACK;
