-- schedules: task_schedules; tick_schedules (stale recovery, then each due schedule once:
-- single, per_store, errors kept per schedule, the cadence without drift or backlog);
-- day_plan, a schedule that calls its planner function for the local day; trigger_schedule and
-- update_schedule, the operator's handles. (The crawler's default schedules and its planner,
-- plan_product_resync, are crawler/sql_tests/schedules.sql.)
BEGIN;
SELECT plan(74);

-- What a rejected call must leave as it was (tests.rejects' tables).
\set written_tables '''{task_schedules, worker_tasks}'''

/****************************************************************************/
-- Structure

SELECT has_table('task_schedules', 'Should have table task_schedules');
SELECT columns_are('task_schedules', ARRAY[
    'id', 'name', 'role', 'kind', 'enabled', 'interval_hours', 'priority', 'state_code', 'payload', 'batches',
    'time_zone', 'last_run_at', 'next_run_at', 'last_task_count', 'last_error', 'created_at', 'updated_at',
    'planner', 'every', 'cron'],
    'Should give task_schedules exactly its columns');
SELECT col_is_pk('task_schedules', 'id', 'Should key task_schedules by id');
SELECT col_is_unique('task_schedules', 'name', 'Should make schedule names unique');
SELECT fk_ok('task_schedules', 'role', 'task_roles', 'role', 'Should tie a schedule to a known role');
SELECT results_eq(
    $$SELECT column_name::text COLLATE "default", data_type::text COLLATE "default", is_nullable::text COLLATE "default"
      FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = 'task_schedules'
        AND column_name IN ('kind', 'enabled', 'interval_hours', 'payload', 'batches', 'time_zone',
                            'last_run_at', 'next_run_at', 'last_task_count', 'last_error')
      ORDER BY column_name$$,
    $$VALUES ('batches', 'integer', 'NO'), ('enabled', 'boolean', 'NO'), ('interval_hours', 'integer', 'YES'),
             ('kind', 'text', 'NO'), ('last_error', 'text', 'YES'), ('last_run_at', 'timestamp with time zone', 'YES'),
             ('last_task_count', 'integer', 'YES'), ('next_run_at', 'timestamp with time zone', 'NO'),
             ('payload', 'jsonb', 'NO'), ('time_zone', 'text', 'NO')$$,
    'Should type the schedule columns, the run record and interval_hours (NULL for cron and sub-hour schedules) nullable');
SELECT results_eq(
    $$SELECT conname::text COLLATE "default" FROM pg_constraint
      WHERE conrelid = 'task_schedules'::regclass AND contype = 'c' ORDER BY conname$$,
    $$VALUES ('task_schedules_batches_in_range'), ('task_schedules_cron_parses'), ('task_schedules_every_in_range'),
             ('task_schedules_interval_hours_in_range'),
             ('task_schedules_kind_known'), ('task_schedules_name_not_blank'), ('task_schedules_one_cadence'),
             ('task_schedules_payload_is_object'), ('task_schedules_planner_is_a_name'),
             ('task_schedules_planner_only_for_day_plan'), ('task_schedules_priority_in_range'),
             ('task_schedules_run_times_finite'),
             ('task_schedules_state_code_is_two_letters')$$,
    'Should have exactly the named CHECK constraints of task_schedules');
SELECT has_index('task_schedules', 'task_schedules_due_idx', ARRAY['next_run_at'],
    'Should index enabled schedules by next_run_at for the tick');
SELECT has_trigger('task_schedules', '_100_touch_updated_at', 'Should stamp updated_at on every schedule change');
SELECT function_returns('public', 'tick_schedules', ARRAY[]::text[], 'jsonb', 'tick_schedules() should return jsonb');
SELECT function_returns('public', 'trigger_schedule', ARRAY['text'], 'task_schedules',
    'trigger_schedule(name) should return the schedule');
SELECT function_returns('public', 'update_schedule',
    ARRAY['text', 'boolean', 'integer', 'integer', 'jsonb', 'text', 'text', 'text', 'interval', 'text', 'text', 'integer',
          'timestamp with time zone'], 'task_schedules',
    'update_schedule(name, enabled, interval_hours, priority, ...) should return the schedule');

-- The constraints, each fired by a row that breaks only it.
SELECT throws_ok($$INSERT INTO task_schedules (name, role, interval_hours) VALUES (' ', 'store_discovery', 1)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_name_not_blank"',
    'Should refuse a blank schedule name');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, kind, interval_hours) VALUES ('t12_x', 'store_discovery', 'weekly', 1)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_kind_known"',
    'Should refuse an unknown kind');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, kind, interval_hours) VALUES ('t12_x', 'store_discovery', 'resync_plan', 1)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_kind_known"',
    'Should refuse resync_plan, the kind day_plan replaced');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, kind, interval_hours) VALUES ('t12_x', 'store_discovery', 'day_plan', 24)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_planner_only_for_day_plan"',
    'Should refuse a day_plan schedule that names no planner');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, planner, interval_hours) VALUES ('t12_x', 'store_discovery', 'tests.t12_plan_day', 24)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_planner_only_for_day_plan"',
    'Should refuse a planner on a schedule that is not a day_plan');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, kind, planner, interval_hours)
                   VALUES ('t12_x', 'store_discovery', 'day_plan', 'now(); DROP TABLE worker_tasks; --', 24)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_planner_is_a_name"',
    'Should refuse a planner that is not a function name');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, interval_hours) VALUES ('t12_x', 'store_discovery', 0)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_interval_hours_in_range"',
    'Should refuse an interval of 0 hours');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, interval_hours, priority) VALUES ('t12_x', 'store_discovery', 1, 101)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_priority_in_range"',
    'Should refuse priority 101');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, interval_hours, state_code) VALUES ('t12_x', 'store_discovery', 1, 'az')$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_state_code_is_two_letters"',
    'Should refuse a state code that is not two capital letters');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, interval_hours, payload) VALUES ('t12_x', 'store_discovery', 1, '[]')$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_payload_is_object"',
    'Should refuse a payload that is not a JSON object');
SELECT throws_ok($$INSERT INTO task_schedules (name, role, interval_hours, batches) VALUES ('t12_x', 'store_discovery', 1, 1441)$$,
    '23514', 'new row for relation "task_schedules" violates check constraint "task_schedules_batches_in_range"',
    'Should refuse 1441 batches');

/****************************************************************************/
-- Fixtures: only this file's schedules and stores are live (this rolls back)

UPDATE task_schedules SET enabled = false WHERE enabled;
UPDATE dispensaries SET active = false WHERE active;

INSERT INTO task_roles (role, description, requires_store, max_payload_bytes, stale_threshold) VALUES
    ('t12_single', 'pgTAP schedules: single schedules', false, 65536, '10 minutes'),
    ('t12_store',  'pgTAP schedules: per_store schedules', true, 65536, '10 minutes'),
    ('t12_tiny',   'pgTAP schedules: refuses payloads over 10 bytes', false, 10, '10 minutes'),
    ('t12_stale',  'pgTAP schedules: a task gone stale', false, 65536, '10 minutes');

INSERT INTO tests.fx (name, id) VALUES
    ('az_1', tests.make_store(name := 't12 AZ 1')),
    ('az_2', tests.make_store(name := 't12 AZ 2')),
    ('az_busy', tests.make_store(name := 't12 AZ busy')),
    ('az_off', tests.make_store(name := 't12 AZ inactive', active := false)),
    ('ca_1', tests.make_store(name := 't12 CA 1'));
UPDATE dispensaries SET state_code = CASE WHEN id = (SELECT id FROM tests.fx WHERE name = 'ca_1') THEN 'CA' ELSE 'AZ' END
WHERE id IN (SELECT id FROM tests.fx);
INSERT INTO tests.fx (name, id)
SELECT 'az_busy_task', tests.make_task(role := 't12_store', dispensary_id := id::integer) FROM tests.fx WHERE name = 'az_busy';
INSERT INTO tests.fx (name, id)
SELECT 'stale_task', id FROM tests.make_claimed_task(worker_id := 't12-w1', role := 't12_stale');
SELECT tests.age_heartbeat((SELECT id FROM tests.fx WHERE name = 'stale_task'), interval '1 hour') AS aged \gset

-- Due in the order listed (next_run_at), then not due, then disabled.
INSERT INTO task_schedules (name, role, kind, interval_hours, priority, state_code, payload, enabled, next_run_at) VALUES
    ('t12_late',      't12_single', 'single',    4, 1, NULL, '{"s": "late"}',       true,  now() - interval '6 hours'),
    ('t12_boundary',  't12_single', 'single',    4, 2, NULL, '{"s": "boundary"}',   true,  now() - interval '4 hours'),
    ('t12_per_store', 't12_store',  'per_store', 24, 3, 'AZ', '{"s": "per_store"}', true,  now() - interval '3 minutes'),
    ('t12_state',     't12_single', 'single',    24, 4, 'CA', '{"s": "state"}',     true,  now() - interval '2 minutes'),
    ('t12_fails',     't12_tiny',   'single',    24, 0, NULL, '{"s": "0123456789"}', true, now() - interval '1 minute'),
    ('t12_due',       't12_single', 'single',    6, 5, NULL, '{"s": "due"}',        true,  now()),
    ('t12_future',    't12_single', 'single',    6, 0, NULL, '{"s": "future"}',     true,  now() + interval '1 minute'),
    ('t12_disabled',  't12_single', 'single',    6, 0, NULL, '{"s": "disabled"}',   false, now() - interval '1 hour'),
    ('t12_broken',    't12_tiny',   'single',    6, 0, NULL, '{"s": "0123456789"}', false, now() - interval '1 hour');
INSERT INTO task_schedules (name, role, kind, planner, interval_hours, priority, batches, time_zone, enabled, next_run_at) VALUES
    ('t12_plan', 't12_single', 'day_plan', 'tests.t12_plan_day', 24, 7, 4, 'America/New_York', false, now() - interval '1 hour');

-- A planner: one task saying which day it planned and the schedule's batches.
CREATE FUNCTION tests.t12_plan_day(schedule task_schedules, day date) RETURNS integer
LANGUAGE sql AS $$
    SELECT count(*)::integer FROM enqueue_task(schedule.role,
        jsonb_build_object('day', day, 'batches', schedule.batches), priority := schedule.priority);
$$;

/****************************************************************************/
-- tick_schedules: each due schedule runs once

SELECT tick_schedules() AS report \gset

SELECT is(:'report'::jsonb,
    '{"recovered": 1,
      "schedules": [{"schedule": "t12_late",      "tasks": 1, "error": null},
                    {"schedule": "t12_boundary",  "tasks": 1, "error": null},
                    {"schedule": "t12_per_store", "tasks": 2, "error": null},
                    {"schedule": "t12_state",     "tasks": 1, "error": null},
                    {"schedule": "t12_fails",     "tasks": 0, "error": "payload is 19 bytes; role t12_tiny allows at most 10"},
                    {"schedule": "t12_due",       "tasks": 1, "error": null}]}'::jsonb,
    'Should report the recovered count and each due schedule in due order, with its task count and error');
SELECT is((SELECT status FROM worker_tasks WHERE id = (SELECT id FROM tests.fx WHERE name = 'stale_task')), 'pending',
    'Should recover a stale task before running the schedules');

SELECT results_eq(
    $$SELECT last_run_at, last_task_count, last_error, next_run_at FROM task_schedules WHERE name = 't12_due'$$,
    $$VALUES (now(), 1, NULL::text, now() + interval '6 hours')$$,
    'Should record the run of a schedule due now, and move next_run_at on by exactly its interval');
SELECT results_eq(
    $$SELECT last_run_at, last_task_count, last_error, next_run_at FROM task_schedules WHERE name = 't12_late'$$,
    $$VALUES (now(), 1, NULL::text, now() + interval '2 hours')$$,
    'Should run a schedule due 1.5 intervals ago once and move it to the next slot of its cadence after now');
SELECT results_eq(
    $$SELECT last_task_count, next_run_at FROM task_schedules WHERE name = 't12_boundary'$$,
    $$VALUES (1, now() + interval '4 hours')$$,
    'Should move a schedule due exactly one interval ago to now plus one interval');
SELECT results_eq(
    $$SELECT payload, priority, status FROM worker_tasks WHERE role = 't12_single' ORDER BY priority$$,
    $$VALUES ('{"s": "late"}'::jsonb, 1, 'pending'::text),
             ('{"s": "boundary"}', 2, 'pending'),
             ('{"s": "state", "state_code": "CA"}', 4, 'pending'),
             ('{"s": "due"}', 5, 'pending')$$,
    'Should make one task per single schedule, with its payload (plus state_code when set) and priority, and no backlog');
SELECT results_eq(
    $$SELECT f.name, t.priority, t.payload
      FROM worker_tasks t JOIN tests.fx f ON f.id = t.dispensary_id AND f.name IN ('az_1', 'az_2', 'az_busy', 'az_off', 'ca_1')
      WHERE t.role = 't12_store'
      ORDER BY f.name$$,
    $$VALUES ('az_1'::text, 3, '{"s": "per_store"}'::jsonb),
             ('az_2', 3, '{"s": "per_store"}'),
             ('az_busy', 0, '{}')$$,
    'Should make a per_store task for each active store of the state, skipping a store with an active task of the role');
SELECT results_eq(
    $$SELECT last_run_at, last_task_count, last_error, next_run_at FROM task_schedules WHERE name = 't12_fails'$$,
    $$VALUES (now(), 0, 'payload is 19 bytes; role t12_tiny allows at most 10'::text, now() + interval '10 minutes')$$,
    'Should record a failed run''s error and 0 tasks, and retry it after least(interval, 10 minutes)');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't12_tiny'), 0::bigint,
    'Should create no task for a failed run');
SELECT results_eq(
    $$SELECT name, last_run_at, last_task_count, next_run_at FROM task_schedules
      WHERE name IN ('t12_future', 't12_disabled', 't12_broken', 't12_plan') ORDER BY name$$,
    $$VALUES ('t12_broken'::text, NULL::timestamptz, NULL::integer, now() - interval '1 hour'),
             ('t12_disabled', NULL, NULL, now() - interval '1 hour'),
             ('t12_future', NULL, NULL, now() + interval '1 minute'),
             ('t12_plan', NULL, NULL, now() - interval '1 hour')$$,
    'Should not run a schedule that is not due yet, nor a disabled one');
SELECT is((SELECT count(*) FROM worker_tasks WHERE payload ->> 's' IN ('future', 'disabled')), 0::bigint,
    'Should create no task for a schedule not due or disabled');

-- A second tick in the same transaction: nothing is due any more.
SELECT count(*) AS tasks_before FROM worker_tasks \gset
SELECT is(tick_schedules(), '{"recovered": 0, "schedules": []}'::jsonb,
    'Should run nothing on a second tick in the same transaction');
SELECT is((SELECT count(*) FROM worker_tasks), :tasks_before::bigint,
    'Should create no task on the second tick');

/****************************************************************************/
-- trigger_schedule: run one schedule now, due or not, enabled or not

SELECT results_eq(
    $$SELECT name, enabled, last_run_at, last_task_count, last_error, next_run_at FROM trigger_schedule('t12_disabled')$$,
    $$VALUES ('t12_disabled'::text, false, now(), 1, NULL::text, now() - interval '1 hour')$$,
    'Should run a disabled schedule now, record the run, and keep it disabled with its next_run_at');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't12_single' AND payload = '{"s": "disabled"}'), 1::bigint,
    'Should create the triggered schedule''s task');
SELECT results_eq(
    $$SELECT last_run_at, last_task_count, next_run_at FROM trigger_schedule('t12_future')$$,
    $$VALUES (now(), 1, now() + interval '1 minute')$$,
    'Should run a schedule that is not due yet, and keep its next_run_at');

UPDATE task_schedules SET payload = '{}' WHERE name = 't12_fails';
SELECT results_eq(
    $$SELECT last_task_count, last_error, next_run_at FROM trigger_schedule('t12_fails')$$,
    $$VALUES (1, NULL::text, now() + interval '10 minutes')$$,
    'Should clear last_error when a triggered run succeeds');

SELECT tests.rejects($$SELECT trigger_schedule('t12_broken')$$,
    '54000', 'payload is 19 bytes; role t12_tiny allows at most 10', 'a triggered run that fails, raising its error',
    tables := :written_tables);
SELECT results_eq(
    $$SELECT last_run_at, last_task_count, last_error FROM task_schedules WHERE name = 't12_broken'$$,
    $$VALUES (NULL::timestamptz, NULL::integer, NULL::text)$$,
    'Should record nothing of a triggered run that failed');

SELECT results_eq(
    $$SELECT last_task_count, last_error FROM trigger_schedule('t12_plan')$$,
    $$VALUES (1, NULL::text)$$,
    'Should run a day_plan schedule through its planner, recording the tasks it made');
SELECT results_eq(
    $$SELECT priority, payload FROM worker_tasks WHERE role = 't12_single' AND payload ? 'day'$$,
    $$VALUES (7, jsonb_build_object('day', (now() AT TIME ZONE 'America/New_York')::date, 'batches', 4))$$,
    'Should hand the planner the schedule and today in the schedule''s time zone');
UPDATE task_schedules SET planner = 'tests.t12_no_such_planner' WHERE name = 't12_plan';
SELECT tests.rejects($$SELECT trigger_schedule('t12_plan')$$,
    '22023', 'planner tests.t12_no_such_planner(task_schedules, date) returning integer does not exist',
    'a day_plan whose planner does not exist', tables := :written_tables);

SELECT tests.rejects($$SELECT trigger_schedule('t12_nope')$$,
    'P0002', 'schedule ''t12_nope'' does not exist', 'triggering an unknown schedule',
    tables := :written_tables);
SELECT is(tests.error_hint($$SELECT trigger_schedule('t12_nope')$$),
    'Schedules: t12_boundary, t12_broken, t12_disabled, '
    't12_due, t12_fails, t12_future, t12_late, t12_per_store, t12_plan, t12_state.',
    'Should list the schedules, sorted, in the hint for an unknown schedule');
SELECT tests.rejects($$SELECT trigger_schedule(NULL)$$,
    '22004', 'a schedule name is required', 'triggering a NULL schedule name',
    tables := :written_tables);

/****************************************************************************/
-- update_schedule

SELECT results_eq(
    $$SELECT enabled, interval_hours, priority, next_run_at FROM update_schedule('t12_due', enabled := false)$$,
    $$VALUES (false, 6, 5, now() + interval '6 hours')$$,
    'Should disable a schedule and keep the rest');
SELECT results_eq(
    $$SELECT enabled, interval_hours, priority, next_run_at FROM update_schedule('t12_due', enabled := true)$$,
    $$VALUES (true, 6, 5, now() + interval '6 hours')$$,
    'Should enable a schedule and keep the rest');
SELECT results_eq(
    $$SELECT interval_hours, next_run_at FROM update_schedule('t12_due', interval_hours := 12)$$,
    $$VALUES (12, now() + interval '12 hours')$$,
    'Should count a new interval from the last run');

UPDATE task_schedules SET last_run_at = now() - interval '1 hour' WHERE name = 't12_boundary';
SELECT results_eq(
    $$SELECT interval_hours, next_run_at FROM update_schedule('t12_boundary', interval_hours := 3)$$,
    $$VALUES (3, now() + interval '2 hours')$$,
    'Should put next_run_at at the last run plus the new interval');
UPDATE task_schedules SET last_run_at = now() - interval '10 hours' WHERE name = 't12_late';
SELECT results_eq(
    $$SELECT interval_hours, next_run_at FROM update_schedule('t12_late', interval_hours := 2)$$,
    $$VALUES (2, now())$$,
    'Should put next_run_at no earlier than now when the last run plus the new interval is past');
SELECT results_eq(
    $$SELECT interval_hours, next_run_at FROM update_schedule('t12_broken', interval_hours := 8)$$,
    $$VALUES (8, now() + interval '8 hours')$$,
    'Should count a new interval from now for a schedule that never ran');
SELECT results_eq(
    $$SELECT interval_hours, next_run_at FROM update_schedule('t12_state', interval_hours := 24)$$,
    $$VALUES (24, now() - interval '2 minutes' + interval '24 hours')$$,
    'Should keep next_run_at when the interval given is the current one');
SELECT results_eq(
    $$SELECT enabled, interval_hours, priority, next_run_at FROM update_schedule('t12_state', priority := -7)$$,
    $$VALUES (true, 24, -7, now() - interval '2 minutes' + interval '24 hours')$$,
    'Should change the priority and keep the rest');
SELECT is((SELECT priority FROM trigger_schedule('t12_state')), -7,
    'Should keep the new priority in the schedule');
SELECT is((SELECT priority FROM worker_tasks WHERE role = 't12_single' AND payload ->> 's' = 'state' ORDER BY id DESC LIMIT 1), -7,
    'Should give the schedule''s next tasks its new priority');

SELECT to_jsonb(s) - 'updated_at' AS per_store_before FROM task_schedules s WHERE name = 't12_per_store' \gset
SELECT is(to_jsonb(update_schedule('t12_per_store')) - 'updated_at', :'per_store_before'::jsonb,
    'Should keep every value when every argument is NULL');

SELECT set_taskpool_clock_offset('1 hour') AS shifted \gset
SELECT is((SELECT updated_at FROM update_schedule('t12_per_store', priority := 9)), now() + interval '1 hour',
    'Should stamp updated_at with taskpool_now() on a change');
SELECT set_taskpool_clock_offset('0') AS shifted \gset

SELECT tests.rejects($$SELECT update_schedule('t12_due', interval_hours := 0)$$,
    '22023', 'interval_hours 0 is out of range', 'an interval of 0 hours',
    tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t12_due', interval_hours := 8761)$$,
    '22023', 'interval_hours 8761 is out of range', 'an interval of 8761 hours',
    tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t12_due', priority := 101)$$,
    '22003', 'priority 101 is out of range', 'priority 101',
    tables := :written_tables);
SELECT tests.rejects($$SELECT update_schedule('t12_nope', enabled := false)$$,
    'P0002', 'schedule ''t12_nope'' does not exist', 'updating an unknown schedule',
    tables := :written_tables);

-- A per_store schedule inserts its tasks as a set, yet refuses a payload its role would refuse.
INSERT INTO task_roles (role, description, requires_store, max_payload_bytes)
VALUES ('t12_tiny_store', 'pgTAP schedules: per_store, refuses payloads over 10 bytes', true, 10);
INSERT INTO task_schedules (name, role, kind, interval_hours, payload, next_run_at)
VALUES ('t12_tiny_per_store', 't12_tiny_store', 'per_store', 1, '{"much": "too long"}', now());
SELECT throws_ok($$SELECT trigger_schedule('t12_tiny_per_store')$$, '54000',
    'payload is 20 bytes; role t12_tiny_store allows at most 10',
    'Should refuse a per_store payload over its role''s limit');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't12_tiny_store'), 0::bigint,
    'Should create no task for a per_store payload over the limit');

SELECT * FROM finish();
ROLLBACK;
