-- health_unserved_roles: ready work that no live worker of its role takes, the commonest outage:
-- unserved_roles(), taskpool_health()'s unserved_roles check and the taskpool_role_unserved metric.
BEGIN;
SELECT plan(19);

INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap)
SELECT r, 'pgTAP health_unserved_roles', false, 3, '10 minutes', '30 seconds', '1 hour'
FROM unnest(ARRAY['t59_a', 't59_b', 't59_c', 't59_d', 't59_e', 't59_f']) AS r;

-- pg_temp.check: the unserved_roles row of taskpool_health().
CREATE FUNCTION pg_temp.check()
RETURNS TABLE (status text, detail text, action text)
LANGUAGE sql
AS $$
    SELECT h.status, h.detail, h.action FROM taskpool_health() h WHERE h.check_name = 'unserved_roles';
$$;

-- pg_temp.unserved_metric: taskpool_role_unserved of a role.
CREATE FUNCTION pg_temp.unserved_metric(role text)
RETURNS double precision
LANGUAGE sql
AS $$
    SELECT m.value FROM taskpool_metrics() m
    WHERE m.metric = 'taskpool_role_unserved' AND m.labels ->> 'role' = unserved_metric.role;
$$;

SELECT is((SELECT status FROM pg_temp.check()), 'ok', 'Should be ok with no ready task');
SELECT is((SELECT detail FROM pg_temp.check()),
    'every role with tasks ready for over 5 minutes has a live worker, or is paused',
    'Should say what it checked when ok');

-- t59_a: 32 ready tasks, the oldest 8 minutes old, no worker ever.
SELECT count(tests.make_task(role := 't59_a', scheduled_for := now() - interval '8 minutes')) AS made FROM generate_series(1, 1) \gset
SELECT count(tests.make_task(role := 't59_a')) AS made FROM generate_series(1, 31) \gset
-- t59_b: as old, a live worker.
SELECT tests.make_task(role := 't59_b', scheduled_for := now() - interval '8 minutes') AS made \gset
SELECT count(*) AS registered FROM register_worker('t59-b', ARRAY['t59_b', 't59_f'], 'pod-b', 201, 20);
-- t59_c: as old, its worker last seen 3 minutes ago.
SELECT tests.make_task(role := 't59_c', scheduled_for := now() - interval '20 minutes') AS made \gset
SELECT count(*) AS registered FROM register_worker('t59-c', ARRAY['t59_c'], 'pod-c', 202, 20);
UPDATE task_workers SET last_seen_at = now() - interval '3 minutes' WHERE worker_id = 't59-c';
-- t59_d: ready for 4 minutes only, no worker.
SELECT tests.make_task(role := 't59_d', scheduled_for := now() - interval '4 minutes') AS made \gset
-- t59_e: paused, ready for 8 minutes, no worker.
SELECT tests.make_task(role := 't59_e', scheduled_for := now() - interval '8 minutes') AS made \gset
SELECT pause_role('t59_e', 'maintenance') AS paused \gset
-- t59_f: ready for 8 minutes, served by t59_b's worker, which serves two roles.
SELECT tests.make_task(role := 't59_f', scheduled_for := now() - interval '8 minutes') AS made \gset
-- a task scheduled later, of a role no worker serves: not ready, no alarm.
SELECT tests.make_task(role := 'store_discovery', scheduled_for := now() + interval '1 hour') AS made \gset

SELECT results_eq(
    $$SELECT role, ready_tasks, oldest_ready_age, last_worker_seen_at FROM unserved_roles()$$,
    $$VALUES ('t59_c'::text, 1::bigint, interval '20 minutes', now() - interval '3 minutes'),
             ('t59_a', 32, interval '8 minutes', NULL)$$,
    'Should list the roles with tasks ready for over 5 minutes and no live worker, the longest waiting first');
SELECT results_eq(
    $$SELECT role FROM unserved_roles('3 minutes')$$,
    $$VALUES ('t59_c'::text), ('t59_a'), ('t59_d')$$,
    'Should take the wait as an argument');
SELECT throws_ok($$SELECT * FROM unserved_roles(NULL)$$, '22023', 'min_wait must be an interval of 0 or more, not NULL',
    'Should refuse a NULL wait');
SELECT throws_ok($$SELECT * FROM unserved_roles('-1 minute')$$, '22023',
    'min_wait must be an interval of 0 or more, not -00:01:00', 'Should refuse a negative wait');

SELECT is((SELECT status FROM pg_temp.check()), 'attention',
    'Should need attention with ready tasks and no live worker of their role');
SELECT is((SELECT detail FROM pg_temp.check()),
    '2 role(s) with tasks ready for over 5 minutes and no live worker: t59_c (1 ready, the oldest waiting 00:20:00; '
    'a worker last seen 00:03:00 ago); t59_a (32 ready, the oldest waiting 00:08:00; no worker ever registered)',
    'Should name each role, its ready tasks, how long the oldest waited and when a worker of it was last seen');
SELECT matches((SELECT action FROM pg_temp.check()), 'pyworker --role t59_c.*pause_role\(''t59_c''',
    'Should say to start a worker of the role, or to pause it');
SELECT is((SELECT status FROM taskpool_health() WHERE check_name = 'paused_roles'), 'attention',
    'Should leave the paused role to the paused_roles check');
SELECT is((SELECT array_agg(check_name) FROM taskpool_health()),
    ARRAY['stuck_tasks', 'unserved_roles', 'schedule_tick', 'schedule_errors', 'open_circuits', 'paused_roles',
          'disabled_platforms', 'xmin_horizon'],
    'Should run unserved_roles second of eight checks');

SELECT is(pg_temp.unserved_metric('t59_a'), 1::double precision, 'Should give taskpool_role_unserved 1 for an unserved role');
SELECT is(pg_temp.unserved_metric('t59_b'), 0::double precision, 'Should give taskpool_role_unserved 0 for a served role');
SELECT is(pg_temp.unserved_metric('t59_e'), 0::double precision, 'Should give taskpool_role_unserved 0 for a paused role');
SELECT is(pg_temp.unserved_metric('t59_d'), 0::double precision,
    'Should give taskpool_role_unserved 0 for a role whose tasks are ready for under 5 minutes');

-- Workers come back: t59_a's registers, t59_c's heartbeats.
SELECT count(*) AS registered FROM register_worker('t59-a', ARRAY['t59_a'], 'pod-a', 203, 20);
SELECT heartbeat_worker('t59-c') AS beat \gset
SELECT is_empty($$SELECT role FROM unserved_roles()$$, 'Should list no role once each has a live worker');
SELECT is((SELECT status FROM pg_temp.check()), 'ok', 'Should be ok again once each role has a live worker');
SELECT is(pg_temp.unserved_metric('t59_a'), 0::double precision, 'Should give taskpool_role_unserved 0 again');

SELECT ok(NOT has_function_privilege('taskpool_worker', 'unserved_roles(interval)', 'execute'),
    'Should not let taskpool_worker run unserved_roles');

SELECT * FROM finish();
ROLLBACK;
