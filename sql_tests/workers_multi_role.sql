-- workers_multi_role: a worker may serve several roles under one id. register_worker(worker_id,
-- roles[], host, pid) registers it for all (a row of settings per role), the registry and the
-- capacity view count it for each; it waits for each role apart (mark_worker_waiting(worker_id,
-- role)), so a wake-up or a claim of one role ends that role's wait alone. Bad input is refused
-- and changes nothing; a login granted only taskpool_worker calls it all.
BEGIN;
SELECT plan(33);

INSERT INTO task_roles (role, description, run_timeout, stale_threshold) VALUES
    ('t41_a', 'pgTAP workers_multi_role: first role', interval '10 minutes', interval '5 minutes'),
    ('t41_b', 'pgTAP workers_multi_role: second role', interval '20 minutes', interval '2 minutes'),
    ('t41_c', 'pgTAP workers_multi_role: a third role', interval '1 hour', interval '10 minutes');

CREATE ROLE t41_worker_login LOGIN IN ROLE taskpool_worker;

/****************************************************************************/
-- Structure and grants

SELECT has_function('public', 'register_worker', ARRAY['text', 'text[]', 'text', 'integer'],
    'Should have register_worker(worker_id, roles, host, pid)');
SELECT has_function('public', 'mark_worker_waiting', ARRAY['text', 'text'],
    'Should have mark_worker_waiting(worker_id, role)');
SELECT ok(has_function_privilege('taskpool_worker', 'register_worker(text, text[], text, integer)', 'execute')
          AND has_function_privilege('taskpool_worker', 'mark_worker_waiting(text, text)', 'execute')
          AND NOT has_function_privilege('public', 'register_worker(text, text[], text, integer)', 'execute'),
    'taskpool_worker may register for several roles and wait per role; PUBLIC may not');

/****************************************************************************/
-- Registering for several roles

SET LOCAL ROLE t41_worker_login;
SELECT results_eq(
    $$ SELECT worker_id, role, run_timeout, stale_threshold
       FROM register_worker('w40', ARRAY['t41_b', 't41_a'], 'host-40', 4040) $$,
    $$ VALUES ('w40', 't41_b', interval '20 minutes', interval '2 minutes'),
              ('w40', 't41_a', interval '10 minutes', interval '5 minutes') $$,
    'register_worker answers a row per role, in the order given, each with its role''s settings');
RESET ROLE;

SELECT is((SELECT role FROM task_workers WHERE worker_id = 'w40'), 't41_b',
    'task_workers.role is the first role given');
SELECT bag_eq($$ SELECT role FROM task_worker_roles WHERE worker_id = 'w40' $$,
    $$ VALUES ('t41_a'), ('t41_b') $$, 'task_worker_roles holds every role the worker serves');
SELECT results_eq(
    $$ SELECT roles, stale_threshold FROM v_workers WHERE worker_id = 'w40' $$,
    $$ VALUES (ARRAY['t41_b', 't41_a'], interval '2 minutes') $$,
    'v_workers lists its roles (the first first) and takes the shortest stale threshold');
SELECT results_eq(
    $$ SELECT role, active_workers FROM v_worker_capacity WHERE role LIKE 't41_%' ORDER BY role $$,
    $$ VALUES ('t41_a', 1::bigint), ('t41_b', 1::bigint), ('t41_c', 0::bigint) $$,
    'v_worker_capacity counts the worker once for each role it serves');
SELECT is((worker_capacity('t41_a')->>'active_workers')::integer, 1,
    'worker_capacity() counts it for its second role too');

SELECT is((SELECT role FROM register_worker('w40one', 't41_c', 'host-40', 4041)), 't41_c',
    'register_worker(worker_id, role, host, pid) still registers a worker of one role');
SELECT results_eq($$ SELECT role FROM task_worker_roles WHERE worker_id = 'w40one' $$,
    $$ VALUES ('t41_c') $$, '... which serves that role alone');

/****************************************************************************/
-- Waiting per role

SET LOCAL ROLE t41_worker_login;
SELECT is(mark_worker_waiting('w40', 't41_a'), true, 'mark_worker_waiting(worker, role) marks it for that role');
SELECT is(mark_worker_waiting('w40', 't41_a'), false, '... once');
SELECT is(mark_worker_waiting('w40'), true, 'mark_worker_waiting(worker) marks it for every role it serves');
SELECT is(mark_worker_waiting('w40'), false, '... and answers false when it waited for all already');
RESET ROLE;
SELECT bag_eq($$ SELECT role FROM task_worker_waits WHERE worker_id = 'w40' $$,
    $$ VALUES ('t41_a'), ('t41_b') $$, 'it waits for each of its roles apart');

-- A claim of one role ends that role's wait, not the other's.
SELECT enqueue_task('t41_a', '{}'::jsonb);
SELECT is((SELECT count(*)::integer FROM claim_tasks('t41_a', 'w40', 1)), 1, 'the worker claims a task of one role');
SELECT results_eq($$ SELECT role FROM task_worker_waits WHERE worker_id = 'w40' $$,
    $$ VALUES ('t41_b') $$, '... which ends its wait for that role alone');

-- A wake-up for one role (at the enqueue's commit) unmarks it for that role alone. The wake-up
-- of the t41_a enqueue above is over first (it found no one waiting for t41_a any more).
SET CONSTRAINTS ALL IMMEDIATE;
SET CONSTRAINTS ALL DEFERRED;
SELECT mark_worker_waiting('w40', 't41_a');
SELECT enqueue_task('t41_b', '{}'::jsonb);
SET CONSTRAINTS ALL IMMEDIATE;
SELECT results_eq($$ SELECT role FROM task_worker_waits WHERE worker_id = 'w40' $$,
    $$ VALUES ('t41_a') $$, 'a wake-up for one role ends the wait for that role alone');
SET CONSTRAINTS ALL DEFERRED;

/****************************************************************************/
-- Registering again, with other roles

SELECT mark_worker_waiting('w40', 't41_b');
SELECT results_eq($$ SELECT role FROM register_worker('w40', ARRAY['t41_a', 't41_c'], 'host-40', 4040) $$,
    $$ VALUES ('t41_a'), ('t41_c') $$, 'a worker may register again with other roles');
SELECT bag_eq($$ SELECT role FROM task_worker_roles WHERE worker_id = 'w40' $$,
    $$ VALUES ('t41_a'), ('t41_c') $$, '... and then serves those alone');
SELECT results_eq($$ SELECT role FROM task_worker_waits WHERE worker_id = 'w40' $$,
    $$ VALUES ('t41_a') $$, '... and no longer waits for the role it dropped');

/****************************************************************************/
-- Bad input is refused and changes nothing

CREATE TEMP TABLE before AS
SELECT (SELECT jsonb_agg(to_jsonb(w) ORDER BY w.worker_id) FROM task_workers w) AS workers,
       (SELECT jsonb_agg(to_jsonb(r) ORDER BY r.worker_id, r.role) FROM task_worker_roles r) AS roles,
       (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.worker_id, x.role) FROM task_worker_waits x) AS waits;

SELECT throws_ok($$ SELECT register_worker('w40x', ARRAY['t41_a', 'no_such', 'nor_this'], 'h', 1) $$,
    '22023', 'unknown role ''no_such'', ''nor_this''', 'unknown roles are named');
SELECT throws_ok($$ SELECT register_worker('w40x', ARRAY['t41_a', 't41_a'], 'h', 1) $$,
    '22023', 'role ''t41_a'' given more than once', 'a role given twice is refused');
SELECT throws_ok($$ SELECT register_worker('w40x', ARRAY[]::text[], 'h', 1) $$,
    '22023', 'a worker serves 1 to 100 roles, not 0', 'no role is refused');
SELECT throws_ok($$ SELECT register_worker('w40x', ARRAY['t41_a', NULL], 'h', 1) $$,
    '22004', 'roles must not contain NULL', 'a NULL role is refused');
SELECT throws_ok($$ SELECT register_worker('w40x', NULL::text[], 'h', 1) $$,
    '22004', 'worker_id, roles, host and pid are all required', 'NULL roles are refused');
SELECT throws_ok($$ SELECT register_worker('w40x', ARRAY['t41_a'], 'h', 0) $$,
    '22023', 'pid must be a positive process id, not 0', 'a bad pid is refused as before');
SELECT throws_ok($$ SELECT mark_worker_waiting('w40', 't41_b') $$,
    '22023', 'worker ''w40'' does not serve role ''t41_b''', 'a worker cannot wait for a role it does not serve');
SELECT throws_ok($$ SELECT mark_worker_waiting('nobody40', 't41_a') $$,
    'P0002', 'worker ''nobody40'' is not registered', 'an unregistered worker cannot wait');
SELECT throws_ok($$ SELECT mark_worker_waiting('nobody40') $$,
    'P0002', 'worker ''nobody40'' is not registered', '... in either form');

SELECT ok((SELECT (SELECT jsonb_agg(to_jsonb(w) ORDER BY w.worker_id) FROM task_workers w) IS NOT DISTINCT FROM b.workers
                  AND (SELECT jsonb_agg(to_jsonb(r) ORDER BY r.worker_id, r.role) FROM task_worker_roles r) IS NOT DISTINCT FROM b.roles
                  AND (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.worker_id, x.role) FROM task_worker_waits x) IS NOT DISTINCT FROM b.waits
           FROM before b),
    'the refused calls changed nothing');

-- Deregistering removes its roles and waits with it.
SELECT deregister_worker('w40');
SELECT is((SELECT count(*)::integer FROM task_worker_roles WHERE worker_id = 'w40'), 0,
    'deregister_worker removes every role of the worker');

SELECT * FROM finish();
ROLLBACK;
