-- schedules_in_full: cron expressions in a time zone (cron_next_run), sub-hour intervals
-- (every), create_schedule, update_schedule for every field, delete_schedule; daylight-saving
-- days both ways, run through the real tick minute by minute: no slot fires twice, none is
-- skipped (issue 17, item 2).
BEGIN;
SELECT plan(103);

\set written_tables '''{task_schedules, worker_tasks}'''

-- Only this file's schedules run (this rolls back).
UPDATE task_schedules SET enabled = false WHERE enabled;
INSERT INTO task_roles (role) VALUES ('t48_role');

/****************************************************************************/
-- cron_next_run: the fields, names, macros and the day rule

SELECT function_returns('public', 'cron_next_run', ARRAY['text', 'timestamp with time zone', 'text'],
    'timestamp with time zone', 'cron_next_run(cron, after, time_zone) should return a time');
SELECT function_privs_are('public', 'cron_next_run', ARRAY['text', 'timestamp with time zone', 'text'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute cron_next_run');
SELECT results_eq(
    $$SELECT cron, cron_next_run(cron, after, zone)
      FROM (VALUES ('*/15 * * * *', timestamptz '2026-01-01 00:07+00', 'UTC'),
                   ('*/15 * * * *', '2026-01-01 00:15+00', 'UTC'),
                   ('5,10-12 3 * * *', '2026-01-01 03:10+00', 'UTC'),
                   ('0 9 * * mon-fri', '2026-11-27 10:00+00', 'UTC'),
                   ('0 9 * * 7', '2026-11-27 10:00+00', 'UTC'),
                   ('0 12 * JAN,jul sun', '2026-11-27 00:00+00', 'UTC'),
                   ('0 0 13 * 5', '2026-11-27 10:00+00', 'UTC'),
                   ('0 0 29 2 *', '2026-03-01 00:00+00', 'UTC'),
                   ('10/20 * * * *', '2026-01-01 00:31+00', 'UTC'),
                   ('@hourly', '2026-01-01 00:00+00', 'UTC'),
                   ('@daily', '2026-01-01 00:00+00', 'Europe/Berlin'),
                   ('@weekly', '2026-01-01 00:00+00', 'UTC'),
                   ('@monthly', '2026-01-01 00:00+00', 'UTC'),
                   ('@yearly', '2026-01-01 00:00+00', 'UTC'),
                   ('0 7 * * *', '2026-07-01 00:00+00', 'Europe/Berlin')) AS v (cron, after, zone)$$,
    $$VALUES ('*/15 * * * *', timestamptz '2026-01-01 00:15+00'),
             ('*/15 * * * *', '2026-01-01 00:30+00'),
             ('5,10-12 3 * * *', '2026-01-01 03:11+00'),
             ('0 9 * * mon-fri', '2026-11-30 09:00+00'),
             ('0 9 * * 7', '2026-11-29 09:00+00'),
             ('0 12 * JAN,jul sun', '2027-01-03 12:00+00'),
             ('0 0 13 * 5', '2026-12-04 00:00+00'),
             ('0 0 29 2 *', '2028-02-29 00:00+00'),
             ('10/20 * * * *', '2026-01-01 00:50+00'),
             ('@hourly', '2026-01-01 01:00+00'),
             ('@daily', '2026-01-01 23:00+00'),
             ('@weekly', '2026-01-04 00:00+00'),
             ('@monthly', '2026-02-01 00:00+00'),
             ('@yearly', '2027-01-01 00:00+00'),
             ('0 7 * * *', '2026-07-01 05:00+00')$$,
    'Should find the next slot strictly after a time: steps, lists, ranges, names, 7 for Sunday, either day field when both are set, macros, local time');

-- Daylight saving, America/New_York 2026: 2026-03-08 02:00 EST becomes 03:00 EDT; 2026-11-01
-- 02:00 EDT becomes 01:00 EST.
SELECT is(cron_next_run('30 2 * * *', '2026-03-08 05:00+00', 'America/New_York'), '2026-03-08 07:30+00'::timestamptz,
    'Should run a slot of the skipped hour an hour later (02:30 at 03:30 EDT)');
SELECT is(cron_next_run('30 2 * * *', '2026-03-08 07:30+00', 'America/New_York'), '2026-03-09 06:30+00'::timestamptz,
    'Should go on to the next day''s 02:30 after the skipped hour''s slot');
SELECT is(cron_next_run('30 1 * * *', '2026-11-01 04:00+00', 'America/New_York'), '2026-11-01 06:30+00'::timestamptz,
    'Should run a slot of the repeated hour once, at its second occurrence (01:30 EST)');
SELECT is(cron_next_run('30 1 * * *', '2026-11-01 06:30+00', 'America/New_York'), '2026-11-02 06:30+00'::timestamptz,
    'Should not run the repeated hour''s slot twice');

-- Bad input: each refused by name.
SELECT throws_ok($$SELECT cron_next_run('* * * *', now())$$, '22023', 'cron expression ''* * * *'' does not have five fields',
    'Should refuse an expression without five fields');
SELECT throws_ok($$SELECT cron_next_run('61 * * * *', now())$$, '22023', 'cron minute field ''61'' is out of range',
    'Should refuse a minute of 61');
SELECT throws_ok($$SELECT cron_next_run('* 24 * * *', now())$$, '22023', 'cron hour field ''24'' is out of range',
    'Should refuse an hour of 24');
SELECT throws_ok($$SELECT cron_next_run('* * 0 * *', now())$$, '22023', 'cron day of month field ''0'' is out of range',
    'Should refuse a day of month of 0');
SELECT throws_ok($$SELECT cron_next_run('* * * foo *', now())$$, '22023', 'cron month field ''foo'' is out of range',
    'Should refuse an unknown month name');
SELECT throws_ok($$SELECT cron_next_run('* * * * 8', now())$$, '22023', 'cron day of week field ''8'' is out of range',
    'Should refuse a day of week of 8');
SELECT throws_ok($$SELECT cron_next_run('5-1 * * * *', now())$$, '22023', 'cron minute field ''5-1'' is out of range',
    'Should refuse a range that goes downwards');
SELECT throws_ok($$SELECT cron_next_run('*/0 * * * *', now())$$, '22023', 'cron minute field ''*/0'' is out of range',
    'Should refuse a step of 0');
SELECT throws_ok($$SELECT cron_next_run('*-5 * * * *', now())$$, '22023', 'cron minute field ''*-5'' is not a value, a range or a step',
    'Should refuse a range from *');
SELECT throws_ok($$SELECT cron_next_run('1,,2 * * * *', now())$$, '22023', 'cron minute field ''1,,2'' is not a value, a range or a step',
    'Should refuse an empty list item');
SELECT throws_ok($$SELECT cron_next_run('99999999999999999999 * * * *', now())$$, '22023',
    'cron minute field ''99999999999999999999'' is out of range', 'Should refuse a number too long for an integer by range');
SELECT throws_ok($$SELECT cron_next_run('0 0 31 2 *', now())$$, '22023', 'cron expression ''0 0 31 2 *'' never fires',
    'Should refuse an expression that never fires');
SELECT throws_ok($$SELECT cron_next_run('* * * * *', now(), 'Mars/Olympus')$$, '22023', 'time zone "Mars/Olympus" not recognized',
    'Should refuse an unknown time zone');
SELECT throws_ok($$SELECT cron_next_run(NULL, now())$$, '22004', 'a cron expression is required',
    'Should refuse a NULL expression');
SELECT throws_ok($$SELECT cron_next_run('* * * * *', 'infinity')$$, '22023', 'after must be a finite time, not infinity',
    'Should refuse an infinite time');

/****************************************************************************/
-- create_schedule

SELECT results_eq(
    $$SELECT name, kind, every, cron, interval_hours, time_zone, priority, enabled, next_run_at
      FROM create_schedule('t48_quarter', 't48_role', every := '15 minutes', priority := 3)$$,
    $$VALUES ('t48_quarter'::text, 'single'::text, interval '15 minutes', NULL::text, NULL::integer, 'UTC'::text, 3, true, now())$$,
    'Should create a sub-hour schedule, due at once, with no interval_hours');
SELECT results_eq(
    $$SELECT every, cron, interval_hours FROM create_schedule('t48_hours', 't48_role', interval_hours := 4)$$,
    $$VALUES (interval '4 hours', NULL::text, 4)$$,
    'Should take interval_hours as every in hours');
SELECT results_eq(
    $$SELECT every, cron, next_run_at FROM create_schedule('t48_cron', 't48_role', cron := '0 7 * * *', time_zone := 'Europe/Berlin')$$,
    $$SELECT NULL::interval, '0 7 * * *'::text, cron_next_run('0 7 * * *', now(), 'Europe/Berlin')$$,
    'Should create a cron schedule due at its next slot in its time zone');
SELECT results_eq(
    $$SELECT next_run_at FROM create_schedule('t48_later', 't48_role', every := '1 day', next_run_at := now() + interval '2 days',
                                            enabled := false, payload := '{"a": 1}', state_code := 'AZ')$$,
    $$VALUES (now() + interval '2 days')$$,
    'Should take next_run_at when given');

CREATE FUNCTION tests.t48_plan_day(schedule task_schedules, day date) RETURNS integer
LANGUAGE sql AS $$ SELECT count(*)::integer FROM enqueue_task(schedule.role, jsonb_build_object('day', day)) $$;
SELECT results_eq(
    $$SELECT kind, planner, next_run_at FROM create_schedule('t48_plan', 't48_role', kind := 'day_plan', planner := 'tests.t48_plan_day',
                                                         interval_hours := 24, time_zone := 'America/New_York')$$,
    $$VALUES ('day_plan'::text, 'tests.t48_plan_day'::text, ((now() AT TIME ZONE 'America/New_York')::date)::timestamp AT TIME ZONE 'America/New_York')$$,
    'Should make a day plan due at today''s local midnight');

SELECT tests.rejects($$SELECT create_schedule('t48_quarter', 't48_role', every := '1 hour')$$,
    '23505', 'schedule ''t48_quarter'' already exists', 'a name already taken', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role')$$,
    '22023', 'a schedule runs on one cadence: give every, interval_hours or cron', 'a schedule with no cadence',
    tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', cron := '* * * * *')$$,
    '22023', 'a schedule runs on one cadence: give every, interval_hours or cron', 'a schedule with two cadences',
    tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 'no_such_role', every := '1 hour')$$,
    'P0002', 'role ''no_such_role'' does not exist', 'an unknown role', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '30 seconds')$$,
    '22023', 'every 00:00:30 is out of range', 'an interval under a minute', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 month')$$,
    '22023', 'every 1 mon is out of range', 'an interval in months', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', interval_hours := 0)$$,
    '22023', 'interval_hours 0 is out of range', 'interval_hours 0', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', cron := '0 25 * * *')$$,
    '22023', 'cron hour field ''25'' is out of range', 'a bad cron expression', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', cron := '0 0 30 2 *')$$,
    '22023', 'cron expression ''0 0 30 2 *'' never fires', 'a cron expression that never fires', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', time_zone := 'Mars/Olympus')$$,
    '22023', 'time zone "Mars/Olympus" not recognized', 'an unknown time zone', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', kind := 'weekly')$$,
    '22023', 'kind ''weekly'' is not single, per_store or day_plan', 'an unknown kind', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 day', kind := 'day_plan')$$,
    '22023', 'a day_plan schedule needs a planner', 'a day plan without a planner', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 day', kind := 'day_plan', planner := 'tests.nope')$$,
    '22023', 'planner tests.nope(task_schedules, date) returning integer does not exist', 'a planner that does not exist',
    tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 day', kind := 'day_plan', planner := 'x; drop table y')$$,
    '22023', 'planner ''x; drop table y'' is not a function name', 'a planner that is not a name', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', planner := 'tests.t48_plan_day')$$,
    '22023', 'a single schedule has no planner', 'a planner on a single schedule', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', priority := 101)$$,
    '22003', 'priority 101 is out of range', 'priority 101', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', state_code := 'arizona')$$,
    '22023', 'state code ''arizona'' is not two capital letters', 'a bad state code', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', payload := '[1]')$$,
    '22023', 'a schedule''s payload must be a JSON object', 'a payload that is not an object', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule('t48_x', 't48_role', every := '1 hour', next_run_at := 'infinity')$$,
    '22023', 'next_run_at must be a finite time, not infinity', 'an infinite next_run_at', tables := :written_tables);
SELECT tests.rejects($$SELECT create_schedule(' ', 't48_role', every := '1 hour')$$,
    '22023', 'a schedule name is required (1 to 100 characters, not blank)', 'a blank name', tables := :written_tables);

/****************************************************************************/
-- update_schedule: every field

SELECT results_eq(
    $$SELECT every, cron, interval_hours, next_run_at FROM update_schedule('t48_hours', cron := '*/10 * * * *')$$,
    $$SELECT NULL::interval, '*/10 * * * *'::text, NULL::integer, cron_next_run('*/10 * * * *', now(), 'UTC')$$,
    'Should switch a schedule to cron, dropping every, due at its next slot');
SELECT results_eq(
    $$SELECT every, cron, interval_hours, next_run_at FROM update_schedule('t48_hours', every := '20 minutes')$$,
    $$VALUES (interval '20 minutes', NULL::text, NULL::integer, now() + interval '20 minutes')$$,
    'Should switch a schedule back to an interval, dropping cron, counted from now when it never ran');
SELECT results_eq(
    $$SELECT every, interval_hours FROM update_schedule('t48_hours', interval_hours := 2)$$,
    $$VALUES (interval '2 hours', 2)$$,
    'Should keep taking interval_hours');
SELECT results_eq(
    $$SELECT payload, state_code, priority, batches, enabled
      FROM update_schedule('t48_hours', payload := '{"b": 2}', state_code := 'CA', priority := -5, batches := 12, enabled := false)$$,
    $$VALUES ('{"b": 2}'::jsonb, 'CA'::text, -5, 12, false)$$,
    'Should change the payload, state, priority, batches and enabled');
SELECT is((SELECT state_code FROM update_schedule('t48_hours', state_code := '')), NULL,
    'Should clear the state code given an empty one');
SELECT results_eq(
    $$SELECT time_zone, next_run_at FROM update_schedule('t48_cron', time_zone := 'Asia/Tokyo')$$,
    $$SELECT 'Asia/Tokyo'::text, cron_next_run('0 7 * * *', now(), 'Asia/Tokyo')$$,
    'Should move a cron schedule to its next slot in its new time zone');
SELECT results_eq(
    $$SELECT next_run_at FROM update_schedule('t48_cron', next_run_at := now() + interval '1 minute')$$,
    $$VALUES (now() + interval '1 minute')$$,
    'Should set next_run_at when given');
SELECT results_eq(
    $$SELECT kind, planner FROM update_schedule('t48_hours', kind := 'day_plan', planner := 'tests.t48_plan_day')$$,
    $$VALUES ('day_plan'::text, 'tests.t48_plan_day'::text)$$,
    'Should change the kind and planner together');
SELECT results_eq(
    $$SELECT kind, planner FROM update_schedule('t48_hours', kind := 'single')$$,
    $$VALUES ('single'::text, NULL::text)$$,
    'Should drop the planner of a schedule that is no longer a day plan');
SELECT tests.rejects($$SELECT update_schedule('t48_hours', every := '1 hour', cron := '* * * * *')$$,
    '22023', 'a schedule runs on one cadence: give every, interval_hours or cron, not several', 'two cadences at once',
    tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t48_hours', cron := '* * *')$$,
    '22023', 'cron expression ''* * *'' does not have five fields', 'a bad cron expression', tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t48_hours', time_zone := 'Mars/Olympus')$$,
    '22023', 'time zone "Mars/Olympus" not recognized', 'an unknown time zone', tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t48_hours', kind := 'day_plan')$$,
    '22023', 'a day_plan schedule needs a planner', 'a day plan without a planner', tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t48_nope', enabled := true)$$,
    'P0002', 'schedule ''t48_nope'' does not exist', 'an unknown schedule', tables := :written_tables);

/****************************************************************************/
-- delete_schedule

SELECT results_eq($$SELECT name FROM delete_schedule('t48_later')$$, $$VALUES ('t48_later'::text)$$,
    'Should return the deleted schedule');
SELECT is_empty($$SELECT FROM task_schedules WHERE name = 't48_later'$$, 'Should delete the schedule');
SELECT tests.rejects($$SELECT delete_schedule('t48_later')$$,
    'P0002', 'schedule ''t48_later'' does not exist', 'deleting a schedule twice', tables := :written_tables);
SELECT tests.rejects($$SELECT delete_schedule(NULL)$$,
    '22004', 'a schedule name is required', 'deleting a NULL name', tables := :written_tables);

/****************************************************************************/
-- The tick, minute by minute through both daylight-saving days of 2026 in New York

DELETE FROM task_schedules WHERE name LIKE 't48_%';
SELECT create_schedule('t48_skipped', 't48_role', cron := '30 2 * * *', time_zone := 'America/New_York',
                       next_run_at := '2026-03-07 12:00+00') IS NOT NULL AS created \gset
SELECT create_schedule('t48_repeated', 't48_role', cron := '30 1 * * *', time_zone := 'America/New_York',
                       next_run_at := '2026-10-31 12:00+00') IS NOT NULL AS created \gset
SELECT create_schedule('t48_half_hourly', 't48_role', cron := '*/30 * * * *', time_zone := 'America/New_York',
                       next_run_at := '2026-03-07 12:00+00') IS NOT NULL AS created \gset
SELECT create_schedule('t48_ten_minutes', 't48_role', every := '10 minutes', next_run_at := '2026-03-07 12:00+00') IS NOT NULL AS created \gset

CREATE TEMP TABLE t48_fires (schedule text, fired_at timestamptz);
-- A tick each minute of the night of each change, on taskpool's clock.
DO $$
DECLARE
    v_minute timestamptz;
    v_run    jsonb;
BEGIN
    FOR v_minute IN
        SELECT generate_series(timestamptz '2026-03-08 00:00-05', '2026-03-08 05:00-04', interval '1 minute')
        UNION ALL
        SELECT generate_series(timestamptz '2026-11-01 00:00-04', '2026-11-01 03:30-05', interval '1 minute')
    LOOP
        PERFORM set_taskpool_clock_offset(v_minute - now());
        FOR v_run IN SELECT jsonb_array_elements(tick_schedules() -> 'schedules') LOOP
            INSERT INTO t48_fires VALUES (v_run ->> 'schedule', v_minute);
        END LOOP;
    END LOOP;
    PERFORM set_taskpool_clock_offset(interval '0');
END;
$$;

SELECT results_eq(
    $$SELECT fired_at FROM t48_fires WHERE schedule = 't48_skipped' AND fired_at > '2026-03-08 00:00-05' AND fired_at < '2026-03-09 00:00-04' ORDER BY 1$$,
    $$VALUES ('2026-03-08 03:30-04'::timestamptz)$$,
    'Should run the skipped hour''s 02:30 once, at 03:30 EDT');
SELECT results_eq(
    $$SELECT fired_at FROM t48_fires WHERE schedule = 't48_repeated' AND fired_at > '2026-11-01 00:00-04' ORDER BY 1$$,
    $$VALUES ('2026-11-01 01:30-05'::timestamptz)$$,
    'Should run the repeated hour''s 01:30 once, at its second occurrence');
SELECT results_eq(
    $$SELECT to_char(fired_at AT TIME ZONE 'America/New_York', 'HH24:MI') FROM t48_fires
      WHERE schedule = 't48_half_hourly' AND fired_at BETWEEN '2026-03-08 00:00-05' AND '2026-03-08 04:00-04' ORDER BY fired_at$$,
    $$VALUES ('00:00'), ('00:30'), ('01:00'), ('01:30'), ('03:00'), ('03:30'), ('04:00')$$,
    'Should run every half hour through the spring-forward change, the skipped hour''s slots folded into 03:00 and 03:30');
SELECT results_eq(
    $$SELECT fired_at FROM t48_fires
      WHERE schedule = 't48_half_hourly' AND fired_at BETWEEN '2026-11-01 00:00-04' AND '2026-11-01 03:00-05' ORDER BY fired_at$$,
    $$VALUES ('2026-11-01 00:00-04'::timestamptz), ('2026-11-01 00:30-04'), ('2026-11-01 01:00-05'), ('2026-11-01 01:30-05'),
             ('2026-11-01 02:00-05'), ('2026-11-01 02:30-05'), ('2026-11-01 03:00-05')$$,
    'Should run each half-hour slot of the fall-back night once, the repeated hour at its second occurrence');
SELECT is_empty(
    $$SELECT fired_at FROM t48_fires
      WHERE schedule = 't48_half_hourly' AND extract(minute FROM fired_at AT TIME ZONE 'America/New_York') NOT IN (0, 30)$$,
    'Should fire the half-hourly schedule only on its slots');
SELECT is_empty(
    $$SELECT fired_at FROM t48_fires WHERE schedule = 't48_half_hourly' GROUP BY fired_at HAVING count(*) > 1$$,
    'Should never fire a slot twice');
SELECT is(
    (SELECT count(*) FROM t48_fires WHERE schedule = 't48_ten_minutes' AND fired_at > '2026-03-08 00:00-05'
       AND fired_at <= '2026-03-08 05:00-04'),
    (extract(epoch FROM timestamptz '2026-03-08 05:00-04' - timestamptz '2026-03-08 00:00-05') / 600)::bigint,
    'Should run a 10-minute schedule every 10 minutes of elapsed time across the change');

/****************************************************************************/
-- per_store: each store an interval after its last completed task, the overdue ones spread

SELECT set_taskpool_clock_offset(interval '0') IS NOT NULL AS reset \gset
UPDATE dispensaries SET active = false WHERE active;
INSERT INTO task_roles (role, requires_store) VALUES ('t48_store', true);
INSERT INTO tests.fx (name, id) VALUES
    ('crawled', tests.make_store(name := 't48 crawled')),
    ('busy', tests.make_store(name := 't48 busy')),
    ('never_1', tests.make_store(name := 't48 never 1')),
    ('never_2', tests.make_store(name := 't48 never 2')),
    ('stale', tests.make_store(name := 't48 stale'));
CREATE FUNCTION pg_temp.crawl(store integer, age interval) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_task worker_tasks;
BEGIN
    PERFORM tests.make_task(role := 't48_store', dispensary_id := store, priority := 100, created_at := '2000-01-01');
    SELECT * INTO v_task FROM claim_task('t48_store', 'w48');
    PERFORM start_task(v_task.id, 'w48', v_task.attempt, tests.claim_token(v_task.id, v_task.attempt));
    PERFORM complete_task(v_task.id, 'w48', v_task.attempt, tests.claim_token(v_task.id, v_task.attempt), '{}');
    PERFORM tests.age_completion(v_task.id, age);
END;
$$;
SELECT pg_temp.crawl(tests.fx('crawled')::integer, interval '1 hour');
SELECT pg_temp.crawl(tests.fx('stale')::integer, interval '5 hours');
SELECT tests.make_task(role := 't48_store', dispensary_id := tests.fx('busy')::integer) IS NOT NULL AS busy \gset

SELECT create_schedule('t48_refresh', 't48_store', kind := 'per_store', every := '4 hours', enabled := false)
       IS NOT NULL AS created \gset
SELECT is((SELECT last_task_count FROM trigger_schedule('t48_refresh')), 4,
    'Should make a task for every active store without an active task of the role');
SELECT results_eq(
    $$SELECT f.name, t.scheduled_for FROM worker_tasks t JOIN tests.fx f ON f.id = t.dispensary_id
      WHERE t.role = 't48_store' AND t.status = 'pending' AND f.name <> 'busy' ORDER BY t.dispensary_id$$,
    $$VALUES ('crawled'::text, now() + interval '3 hours'), ('never_1', now()), ('never_2', now() + interval '1 hour 20 minutes'),
             ('stale', now() + interval '2 hours 40 minutes')$$,
    'Should schedule a store crawled an hour ago 4 hours after that crawl, and spread the overdue ones evenly over the 4 hours');
SELECT is((SELECT last_task_count FROM trigger_schedule('t48_refresh')), 0,
    'Should make nothing for stores that already have a task of the role');

/****************************************************************************/
-- A failed cron run retries at its next slot when that is sooner than 10 minutes

SELECT create_schedule('t48_failing', 't48_role', cron := '*/2 * * * *', payload := '{"x": 1}',
                       next_run_at := now() - interval '1 minute') IS NOT NULL AS created \gset
UPDATE task_roles SET max_payload_bytes = 1 WHERE role = 't48_role';
SELECT tick_schedules() AS report \gset
SELECT results_eq(
    $$SELECT last_task_count, last_error IS NOT NULL, next_run_at FROM task_schedules WHERE name = 't48_failing'$$,
    $$SELECT 0, true, cron_next_run('*/2 * * * *', now(), 'UTC')$$,
    'Should retry a failed every-two-minutes cron schedule at its next slot');

SELECT * FROM finish();
ROLLBACK;
