-- health: taskpool_health(), each check turning red and back; the tick's record in
-- schedule_ticks, which a racing tick never waits for; v_workers, live and silent workers.
BEGIN;
SELECT plan(46);

-- Three enabled schedules (the core ships none; a deploy with the crawler has its three).
INSERT INTO task_schedules (name, role, kind, interval_hours, priority, next_run_at) VALUES
    ('t34_daily',    'store_discovery',   'single', 24, 5, taskpool_now()),
    ('t34_often',    'analytics_refresh', 'single',  6, 0, taskpool_now()),
    ('t34_nightly',  'analytics_refresh', 'single', 24, 0, taskpool_now());

-- pg_temp.health: one check's row of taskpool_health(), with fresh pg_stat_activity data.
CREATE FUNCTION pg_temp.health(name text, max_tick_age interval DEFAULT NULL,
                               max_snapshot_age interval DEFAULT NULL)
RETURNS TABLE (status text, detail text, action text)
LANGUAGE sql
AS $$
    SELECT pg_stat_clear_snapshot();
    SELECT h.status, h.detail, h.action
    FROM taskpool_health(health.max_tick_age, health.max_snapshot_age) h
    WHERE h.check_name = health.name;
$$;

/****************************************************************************/
-- Structure

SELECT has_function('taskpool_health', ARRAY['interval', 'interval'], 'Should have taskpool_health(interval, interval)');
SELECT has_table('schedule_ticks', 'Should have table schedule_ticks');
SELECT has_view('v_workers', 'Should have view v_workers');
SELECT columns_are('v_workers', ARRAY['worker_id', 'role', 'host', 'pid', 'started_at', 'last_seen_at',
    'last_seen_age', 'stale_threshold', 'liveness', 'task_ids', 'roles'],
    'Should give each worker its registry row, how long since it was seen, its liveness, its tasks and its roles');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'taskpool_health(interval, interval)', 'execute'),
    'Should not let taskpool_worker run the health checks');
SELECT ok(NOT has_table_privilege('taskpool_worker', 'v_workers', 'select'),
    'Should not show the registry to taskpool_worker');

/****************************************************************************/
-- A healthy pool: every check ok, in a fixed order, with no action

SELECT tick_schedules();
SELECT is((SELECT last_tick_at FROM schedule_ticks), now(), 'Should record the tick''s time in schedule_ticks');
SELECT results_eq(
    $$SELECT check_name, status, action FROM taskpool_health()$$,
    $$VALUES ('stuck_tasks'::text, 'ok'::text, NULL::text), ('unserved_roles', 'ok', NULL),
             ('schedule_tick', 'ok', NULL), ('schedule_errors', 'ok', NULL),
             ('open_circuits', 'ok', NULL), ('paused_roles', 'ok', NULL), ('disabled_platforms', 'ok', NULL),
             ('xmin_horizon', 'ok', NULL)$$,
    'Should report every check ok, in order, with no action, right after a tick');
SELECT is((SELECT detail FROM pg_temp.health('schedule_tick')),
    format('last tick 00:00:00 ago, at %s; 3 schedule(s) enabled', date_trunc('second', now())),
    'Should say when the last tick ran and how many schedules wait on it');

/****************************************************************************/
-- stuck_tasks

SELECT id AS stuck_id FROM tests.make_claimed_task('w34_gone', 'store_discovery') \gset
SELECT tests.age_heartbeat(:stuck_id, '30 minutes');
SELECT is((SELECT status FROM pg_temp.health('stuck_tasks')), 'ok',
    'Should not count a task silent for exactly its role''s stale threshold');
SELECT tests.age_heartbeat(:stuck_id, '31 minutes');
SELECT results_eq(
    $$SELECT status, detail FROM pg_temp.health('stuck_tasks')$$,
    format($$VALUES ('attention'::text, '1 claimed or running task(s) silent past their role''s stale threshold; '
                     'the oldest: task %s (store_discovery) of worker w34_gone, silent for 00:31:00 (threshold 00:30:00)'::text)$$,
           :stuck_id),
    'Should turn red for a task silent past its role''s stale threshold, naming it, its worker and how long');
SELECT matches((SELECT action FROM pg_temp.health('stuck_tasks')), 'SELECT recover_stale_tasks\(\);',
    'Should say how to recover the stuck tasks now');
SELECT is(recover_stale_tasks(), 1, 'Should recover the stuck task');
SELECT is((SELECT status FROM pg_temp.health('stuck_tasks')), 'ok', 'Should be ok again once the task is recovered');

/****************************************************************************/
-- schedule_tick (the last tick ran at now())

SELECT set_taskpool_clock_offset('10 minutes');
SELECT is((SELECT status FROM pg_temp.health('schedule_tick')), 'ok', 'Should accept a tick exactly max_tick_age ago');
SELECT set_taskpool_clock_offset('11 minutes');
SELECT results_eq(
    $$SELECT status, detail FROM pg_temp.health('schedule_tick')$$,
    format($$VALUES ('attention'::text, 'last tick 00:11:00 ago, at %s, longer than 00:10:00; 3 schedule(s) enabled'::text)$$,
           date_trunc('second', now())),
    'Should turn red when the last tick is older than max_tick_age, saying when it ran');
SELECT matches((SELECT action FROM pg_temp.health('schedule_tick')), 'pyworker cron install.*pyworker scheduler.*SELECT tick_schedules\(\);',
    'Should say how to run the tick');
SELECT is((SELECT status FROM pg_temp.health('schedule_tick', max_tick_age := '1 hour')), 'ok',
    'Should take a longer max_tick_age for a slower tick');
SELECT update_schedule(name, enabled := false) FROM task_schedules;
SELECT results_eq(
    $$SELECT status, detail FROM pg_temp.health('schedule_tick')$$,
    format($$VALUES ('ok'::text, 'last tick 00:11:00 ago, at %s; 0 schedule(s) enabled'::text)$$, date_trunc('second', now())),
    'Should not ask for a tick while no schedule is enabled');
SELECT update_schedule(name, enabled := true) FROM task_schedules;
SELECT tick_schedules();
SELECT is((SELECT status FROM pg_temp.health('schedule_tick')), 'ok', 'Should be ok again after the next tick');
SELECT set_taskpool_clock_offset('0');

UPDATE schedule_ticks SET last_tick_at = NULL, created_at = now() - interval '9 minutes';
SELECT results_eq(
    $$SELECT status, detail FROM pg_temp.health('schedule_tick')$$,
    format($$VALUES ('ok'::text, 'no tick since the deploy 00:09:00 ago, at %s; 3 schedule(s) enabled'::text)$$,
           date_trunc('second', now() - interval '9 minutes')),
    'Should give a database that never ticked max_tick_age from the deploy');
UPDATE schedule_ticks SET created_at = now() - interval '11 minutes';
SELECT is((SELECT status FROM pg_temp.health('schedule_tick')), 'attention',
    'Should turn red when a database never ticked within max_tick_age of the deploy');

-- A rival tick holding the row (this transaction ticked: it holds it until the end) is not waited for.
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('t34_rival', tests.session_conninfo('t34_rival'));
SELECT dblink_exec('t34_rival', 'BEGIN');
SELECT dblink_exec('t34_rival', 'SET LOCAL lock_timeout = ''2s''');
SELECT lives_ok($$SELECT * FROM dblink('t34_rival', 'SELECT tick_schedules()') AS r(report jsonb)$$,
    'Should let a tick racing another one finish without waiting for the other''s commit');
SELECT dblink_exec('t34_rival', 'ROLLBACK');

/****************************************************************************/
-- schedule_errors

INSERT INTO task_roles (role, max_payload_bytes) VALUES ('t34_tiny', 10);
INSERT INTO task_schedules (name, role, kind, interval_hours, payload, next_run_at)
VALUES ('t34_fails', 't34_tiny', 'single', 24, '{"s": "0123456789"}', now());
SELECT tick_schedules();
SELECT results_eq(
    $$SELECT status, detail FROM pg_temp.health('schedule_errors')$$,
    $$VALUES ('attention'::text, '1 enabled schedule(s) failed their last run: t34_fails: payload is 19 bytes; role t34_tiny allows at most 10'::text)$$,
    'Should turn red for an enabled schedule whose last run failed, with its error');
SELECT matches((SELECT action FROM pg_temp.health('schedule_errors')), 'trigger_schedule\(name\)',
    'Should say how to run the schedule again');
SELECT update_schedule('t34_fails', enabled := false);
SELECT is((SELECT status FROM pg_temp.health('schedule_errors')), 'ok', 'Should not count a disabled schedule''s error');
SELECT update_schedule('t34_fails', enabled := true);
UPDATE task_roles SET max_payload_bytes = 1000 WHERE role = 't34_tiny';
SELECT trigger_schedule('t34_fails');
SELECT is((SELECT status FROM pg_temp.health('schedule_errors')), 'ok', 'Should be ok again once the schedule runs');

/****************************************************************************/
-- open_circuits

SELECT record_platform_result('t34_platform', false, 'HTTP 500') FROM generate_series(1, 4);
SELECT is((SELECT status FROM pg_temp.health('open_circuits')), 'ok', 'Should not count failures below the threshold');
SELECT record_platform_result('t34_platform', false, 'HTTP 503');
SELECT results_eq(
    $$SELECT status, detail FROM pg_temp.health('open_circuits')$$,
    -- the cooldown starts by the clock when the failure's report holds the platform's row
    format($$VALUES ('attention'::text, '1 platform circuit(s) open: t34_platform until %s (5 failures in a row, the last: HTTP 503)'::text)$$,
           date_trunc('second', (SELECT open_until FROM platform_governance WHERE platform = 't34_platform'))),
    'Should turn red for an open circuit, naming the platform, until when, and its last error');
SELECT matches((SELECT action FROM pg_temp.health('open_circuits')), $$SELECT record_platform_result\('t34_platform', true\);$$,
    'Should say how to close the circuit');
SELECT set_taskpool_clock_offset('5 minutes 1 second');
SELECT is((SELECT status FROM pg_temp.health('open_circuits')), 'ok', 'Should be ok once the cooldown is over');
SELECT set_taskpool_clock_offset('0');
SELECT record_platform_result('t34_platform', true);
SELECT is((SELECT status FROM pg_temp.health('open_circuits')), 'ok', 'Should be ok once a success closes the circuit');

/****************************************************************************/
-- xmin_horizon: another session holding a snapshot

SELECT dblink_exec('t34_rival', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT r.pid AS holder_pid FROM dblink('t34_rival', 'SELECT pg_backend_pid()') AS r(pid integer) \gset
SELECT is((SELECT status FROM pg_temp.health('xmin_horizon')), 'ok',
    'Should not count a snapshot younger than max_snapshot_age');
SELECT is((SELECT status FROM pg_temp.health('xmin_horizon', max_snapshot_age := '0')), 'attention',
    'Should turn red for a session holding a snapshot longer than max_snapshot_age');
SELECT matches((SELECT detail FROM pg_temp.health('xmin_horizon', max_snapshot_age := '0')),
    format('^1 holder\(s\) of a snapshot older than 00:00:00; the oldest: session %s \(user %s, '
           'application ''t34_rival'', idle in transaction\), for \d\d:\d\d:\d\d$', :holder_pid, current_user),
    'Should name the session, its user, application and state, and how long it has held its snapshot');
SELECT is((SELECT action ~ format('SELECT pg_terminate_backend\(%s\);', :holder_pid)
           FROM pg_temp.health('xmin_horizon', max_snapshot_age := '0')), true,
    'Should say how to end the session');
SELECT dblink_exec('t34_rival', 'COMMIT');
SELECT is((SELECT status FROM pg_temp.health('xmin_horizon', max_snapshot_age := '0')), 'ok',
    'Should be ok again once the session ends its transaction');
SELECT dblink_disconnect('t34_rival');

/****************************************************************************/
-- Bad input

SELECT results_eq($$SELECT * FROM taskpool_health(NULL, NULL)$$, $$SELECT * FROM taskpool_health()$$,
    'Should take a NULL max age for its default');
SELECT throws_ok($$SELECT * FROM taskpool_health(max_tick_age := '-1 minute')$$, '22023',
    'max_tick_age must not be negative, not -00:01:00', 'Should refuse a negative max_tick_age, naming it');
SELECT throws_ok($$SELECT * FROM taskpool_health(max_snapshot_age := '-1 second')$$, '22023',
    'max_snapshot_age must not be negative, not -00:00:01', 'Should refuse a negative max_snapshot_age, naming it');

/****************************************************************************/
-- v_workers

SELECT register_worker('w34_live', 'store_discovery', 'host-a', 101);
SELECT register_worker('w34_dead', 'analytics_refresh', 'host-b', 202);
SELECT id AS held_1 FROM tests.make_claimed_task('w34_dead', 'analytics_refresh') \gset
SELECT id AS held_2 FROM tests.make_claimed_task('w34_dead', 'analytics_refresh') \gset
SELECT results_eq(
    $$SELECT worker_id, host, pid, last_seen_age, stale_threshold, liveness, task_ids FROM v_workers
      WHERE worker_id LIKE 'w34%' ORDER BY worker_id$$,
    format($$VALUES ('w34_dead'::text, 'host-b'::text, 202, interval '0', interval '30 minutes', 'live'::text, ARRAY[%s, %s]::bigint[]),
                    ('w34_live', 'host-a', 101, interval '0', interval '30 minutes', 'live', '{}')$$, :held_1, :held_2),
    'Should list registered workers as live, with the tasks each holds');
UPDATE task_workers SET last_seen_at = now() - interval '30 minutes' WHERE worker_id = 'w34_dead';
SELECT is((SELECT liveness FROM v_workers WHERE worker_id = 'w34_dead'), 'live',
    'Should keep a worker seen exactly its role''s stale threshold ago live');
UPDATE task_workers SET last_seen_at = now() - interval '31 minutes' WHERE worker_id = 'w34_dead';
SELECT results_eq(
    $$SELECT worker_id, last_seen_age, liveness, cardinality(task_ids) FROM v_workers WHERE worker_id LIKE 'w34%' ORDER BY worker_id$$,
    $$VALUES ('w34_dead'::text, interval '31 minutes', 'silent'::text, 2), ('w34_live', interval '0', 'live', 0)$$,
    'Should mark a worker silent past its role''s stale threshold, still holding its tasks');
SELECT heartbeat_worker('w34_dead');
SELECT is((SELECT liveness FROM v_workers WHERE worker_id = 'w34_dead'), 'live', 'Should be live again after a heartbeat');
SELECT set_taskpool_clock_offset('31 minutes');
SELECT is((SELECT liveness FROM v_workers WHERE worker_id = 'w34_live'), 'silent',
    'Should read taskpool''s clock');
SELECT set_taskpool_clock_offset('0');
SELECT deregister_worker('w34_dead');
SELECT is((SELECT count(*) FROM v_workers WHERE worker_id = 'w34_dead'), 0::bigint, 'Should drop a deregistered worker');

SELECT * FROM finish();
ROLLBACK;
