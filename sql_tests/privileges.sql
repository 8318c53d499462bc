-- Privileges: taskpool_worker executes the eight worker-side functions and nothing else, PUBLIC
-- executes no taskpool function, no one but the owner touches the tables; and the worker-side
-- functions, SECURITY DEFINER, work for taskpool_worker with their search_path pinned.
BEGIN;
SELECT plan(62);

-- A role with no grants of its own: what it may do, PUBLIC may do.
CREATE ROLE tp_nobody NOLOGIN;

/****************************************************************************/
-- structure: SECURITY DEFINER with a pinned search_path

SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", p.prosecdef,
             (SELECT c FROM unnest(p.proconfig) AS c WHERE c LIKE 'search_path=%') ~ '^search_path=.*\mpg_temp$'
      FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.proname IN ('claim_task', 'claim_tasks', 'claim_and_start_tasks', 'start_task', 'heartbeat_task',
                          'complete_task', 'complete_tasks', 'fail_task', 'snooze_task', 'release_task')
      ORDER BY p.proname$$,
    $$VALUES ('claim_and_start_tasks', true, true),
             ('claim_task', true, true),
             ('claim_tasks', true, true),
             ('complete_task', true, true),
             ('complete_tasks', true, true),
             ('complete_tasks', true, true),
             ('fail_task', true, true),
             ('heartbeat_task', true, true),
             ('release_task', true, true),
             ('snooze_task', true, true),
             ('start_task', true, true)$$,
    'Should make the worker-side functions SECURITY DEFINER with a search_path that ends in pg_temp');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text
      FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace AND p.prosecdef
        AND NOT coalesce((SELECT c FROM unnest(p.proconfig) AS c WHERE c LIKE 'search_path=%') ~ '^search_path=.*\mpg_temp$',
                         false)$$,
    'Should pin search_path, pg_temp last, in every SECURITY DEFINER function of the schema');

/****************************************************************************/
-- function privileges

SELECT function_privs_are('public', 'claim_task', ARRAY['text', 'text'], 'taskpool_worker', ARRAY['EXECUTE'],
    'Should let taskpool_worker execute claim_task');
SELECT function_privs_are('public', 'claim_tasks', ARRAY['text', 'text', 'integer'], 'taskpool_worker', ARRAY['EXECUTE'],
    'Should let taskpool_worker execute claim_tasks');
SELECT function_privs_are('public', 'start_task', ARRAY['bigint', 'text', 'integer', 'uuid'], 'taskpool_worker', ARRAY['EXECUTE'],
    'Should let taskpool_worker execute start_task');
SELECT function_privs_are('public', 'heartbeat_task', ARRAY['bigint', 'text', 'integer', 'uuid'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute heartbeat_task');
SELECT function_privs_are('public', 'complete_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'jsonb', 'jsonb'],
    'taskpool_worker', ARRAY['EXECUTE'], 'Should let taskpool_worker execute complete_task');
SELECT function_privs_are('public', 'fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute fail_task');
SELECT function_privs_are('public', 'snooze_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'timestamp with time zone'],
    'taskpool_worker', ARRAY['EXECUTE'], 'Should let taskpool_worker execute snooze_task');
SELECT function_privs_are('public', 'release_task', ARRAY['bigint', 'text', 'integer', 'uuid'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute release_task');

SELECT function_privs_are('public', 'taskpool_now', ARRAY[]::name[], 'taskpool_worker', ARRAY['EXECUTE'],
    'Should let taskpool_worker read the database clock (snooze names times with it)');
SELECT function_privs_are('public', 'enqueue_task',
    ARRAY['text', 'jsonb', 'integer', 'integer', 'timestamp with time zone', 'text', 'integer', 'text', 'jsonb',
          'interval', 'interval', 'interval', 'boolean'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute enqueue_task');
SELECT function_privs_are('public', 'enqueue_tasks', ARRAY['jsonb'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute enqueue_tasks');
SELECT function_privs_are('public', 'cancel_task', ARRAY['bigint'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute cancel_task');
SELECT function_privs_are('public', 'retry_task', ARRAY['bigint'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute retry_task');
SELECT function_privs_are('public', 'recover_stale_tasks', ARRAY['integer'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute recover_stale_tasks');
SELECT function_privs_are('public', 'prune_tasks', ARRAY['interval', 'integer'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute prune_tasks');
SELECT function_privs_are('public', '_enqueue_specs', ARRAY['jsonb', 'text', 'bigint'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute _enqueue_specs (it would bypass enqueue''s grant)');

-- Every callable function of the schema (trigger functions cannot be called; pgTAP's are the
-- extension's), with whether taskpool_worker and PUBLIC may execute it.
CREATE TEMP VIEW taskpool_functions AS
SELECT p.oid, p.proname::text COLLATE "default" AS proname
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
  AND p.prorettype <> 'trigger'::regtype
  AND NOT EXISTS (SELECT FROM pg_depend d
                  WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e');

SELECT results_eq(
    $$SELECT proname FROM taskpool_functions
      WHERE has_function_privilege('taskpool_worker', oid, 'EXECUTE') ORDER BY proname$$,
    $$VALUES ('acquire_platform_request'), ('claim_and_start_tasks'), ('claim_task'),
             ('claim_tasks'), ('complete_task'), ('complete_tasks'), ('complete_tasks'), ('deregister_worker'), ('diff_role'),
             ('fail_task'), ('heartbeat_task'), ('heartbeat_tasks'), ('heartbeat_worker'),
             ('mark_worker_waiting'), ('mark_worker_waiting'), ('platform_token_wait'),
             ('record_platform_result'), ('recover_stale_tasks_of_role'), ('register_worker'), ('register_worker'), ('register_worker'),
             ('release_task'), ('reserve_platform_request'), ('snooze_task'), ('start_task'), ('task_slots_wanted'), ('taskpool_now'),
             ('taskpool_schema_version'), ('worker_wake_channel')$$,
    'Should let taskpool_worker execute exactly the worker-side functions (the crawler''s are in crawler/sql_tests)');
SELECT is_empty(
    $$SELECT oid::regprocedure::text FROM taskpool_functions WHERE has_function_privilege('tp_nobody', oid, 'EXECUTE')$$,
    'Should let PUBLIC execute none of the taskpool functions');
SELECT is((SELECT count(*) FROM taskpool_functions
           WHERE proname IN ('taskpool_now', 'enqueue_task', 'enqueue_tasks', 'claim_task', 'claim_tasks',
                             'start_task', 'heartbeat_task', 'complete_task', 'fail_task', 'snooze_task',
                             'release_task', 'cancel_task', 'retry_task', 'recover_stale_tasks', 'prune_tasks',
                             'register_worker', 'heartbeat_worker', 'deregister_worker', 'taskpool_schema_version',
                             'acquire_platform_request', 'record_platform_result', 'claim_and_start_tasks',
                             'complete_tasks', 'mark_worker_waiting', 'worker_wake_channel')),
          29::bigint, 'Should have checked all twenty-nine public taskpool functions above (register_worker in three forms, mark_worker_waiting and complete_tasks in two)');
SELECT function_privs_are('public', 'claim_task', ARRAY['text', 'text'], 'tp_nobody', ARRAY[]::text[],
    'Should not let PUBLIC execute claim_task');
SELECT function_privs_are('public', 'complete_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'jsonb', 'jsonb'],
    'tp_nobody', ARRAY[]::text[], 'Should not let PUBLIC execute complete_task');
SELECT function_privs_are('public', 'enqueue_task',
    ARRAY['text', 'jsonb', 'integer', 'integer', 'timestamp with time zone', 'text', 'integer', 'text', 'jsonb',
          'interval', 'interval', 'interval', 'boolean'],
    'tp_nobody', ARRAY[]::text[], 'Should not let PUBLIC execute enqueue_task');

/****************************************************************************/
-- table and schema privileges

SELECT table_privs_are('worker_tasks', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on worker_tasks');
SELECT table_privs_are('task_roles', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on task_roles');
SELECT table_privs_are('dispensaries', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on dispensaries');
SELECT table_privs_are('worker_task_attempts', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on worker_task_attempts');
SELECT table_privs_are('task_status_transitions', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on task_status_transitions');
SELECT table_privs_are('worker_tasks', 'tp_nobody', ARRAY[]::text[], 'Should give PUBLIC no privilege on worker_tasks');
SELECT schema_privs_are('public', 'taskpool_worker', ARRAY['USAGE'],
    'Should give taskpool_worker USAGE on the schema, and no CREATE');

/****************************************************************************/
-- behaviour as taskpool_worker

-- Prepared as superuser, in a test-local role so that the claims take exactly these tasks.
INSERT INTO task_roles (role, requires_store) VALUES ('priv_test_role', false);
SELECT tests.make_task(role := 'priv_test_role', priority := 50) AS a_id \gset
SELECT tests.make_task(role := 'priv_test_role', priority := 40) AS b_id \gset
SELECT tests.make_task(role := 'priv_test_role', priority := 30) AS c_id \gset
SELECT tests.make_task(role := 'priv_test_role', priority := 20) AS d_id \gset
SELECT tests.make_task(role := 'priv_test_role', priority := 10) AS e_id \gset

SET ROLE taskpool_worker;

SELECT is(current_user::text, 'taskpool_worker', 'Should now run as taskpool_worker');
SELECT results_eq(
    $$SELECT id, status, attempt FROM claim_task('priv_test_role', 'w-priv')$$,
    format($$VALUES (%s::bigint, 'claimed'::text, 1)$$, :a_id),
    'Should let taskpool_worker claim a task');
SELECT is((start_task(:a_id, 'w-priv', 1, tests.claim_token(:a_id, 1))).status, 'running', 'Should let taskpool_worker start its task');
SELECT is(heartbeat_task(:a_id, 'w-priv', 1, tests.claim_token(:a_id, 1)), 'continue', 'Should let taskpool_worker heartbeat its task');
SELECT is((complete_task(:a_id, 'w-priv', 1, tests.claim_token(:a_id, 1), '{"ok": true}',
                         '[{"role": "store_discovery", "dedupe_key": "priv:follow-up"}]')).status,
          'completed', 'Should let taskpool_worker complete its task, with a follow-up');
SELECT results_eq(
    $$SELECT id, attempt FROM claim_tasks('priv_test_role', 'w-priv', 3)$$,
    format($$VALUES (%s::bigint, 1), (%s, 1), (%s, 1)$$, :b_id, :c_id, :d_id),
    'Should let taskpool_worker claim a batch');
SELECT is((fail_task(:b_id, 'w-priv', 1, tests.claim_token(:b_id, 1), 'HTTP 503')).status, 'pending',
          'Should let taskpool_worker fail its task (retried)');
SELECT is((snooze_task(:c_id, 'w-priv', 1, tests.claim_token(:c_id, 1), now() + interval '1 hour')).status, 'pending',
          'Should let taskpool_worker snooze its task');
SELECT is((release_task(:d_id, 'w-priv', 1, tests.claim_token(:d_id, 1))).status, 'pending', 'Should let taskpool_worker release its task');
SELECT throws_ok(format($$SELECT complete_task(%s, 'w-other', 1, tests.claim_token(%1$s, 1))$$, :b_id),
    '55000', format('task %s attempt 1 is not owned by worker ''w-other''', :b_id),
    'Should still fence taskpool_worker out of a task it does not own');

SELECT throws_ok('SELECT count(*) FROM worker_tasks', '42501', 'permission denied for table worker_tasks',
    'Should refuse taskpool_worker a direct SELECT on worker_tasks');
SELECT throws_ok($$INSERT INTO worker_tasks (role) VALUES ('priv_test_role')$$,
    '42501', 'permission denied for table worker_tasks',
    'Should refuse taskpool_worker a direct INSERT into worker_tasks');
SELECT throws_ok(format($$UPDATE worker_tasks SET priority = 100 WHERE id = %s$$, :e_id),
    '42501', 'permission denied for table worker_tasks',
    'Should refuse taskpool_worker a direct UPDATE of worker_tasks');
SELECT throws_ok(format('DELETE FROM worker_tasks WHERE id = %s', :e_id),
    '42501', 'permission denied for table worker_tasks',
    'Should refuse taskpool_worker a direct DELETE from worker_tasks');
SELECT throws_ok('SELECT count(*) FROM worker_task_attempts', '42501', 'permission denied for table worker_task_attempts',
    'Should refuse taskpool_worker a direct SELECT on worker_task_attempts');
SELECT throws_ok($$UPDATE task_roles SET max_retries = 1000$$, '42501', 'permission denied for table task_roles',
    'Should refuse taskpool_worker a direct UPDATE of task_roles');
SELECT throws_ok($$INSERT INTO dispensaries (name) VALUES ('Rogue Store')$$,
    '42501', 'permission denied for table dispensaries',
    'Should refuse taskpool_worker a direct INSERT into dispensaries');
SELECT throws_ok($$DELETE FROM task_status_transitions$$,
    '42501', 'permission denied for table task_status_transitions',
    'Should refuse taskpool_worker a change to the legal transitions');

SELECT throws_ok($$SELECT enqueue_task('priv_test_role')$$, '42501', 'permission denied for function enqueue_task',
    'Should refuse taskpool_worker enqueue_task');
SELECT throws_ok($$SELECT enqueue_tasks('[{"role": "priv_test_role"}]')$$,
    '42501', 'permission denied for function enqueue_tasks', 'Should refuse taskpool_worker enqueue_tasks');
SELECT throws_ok(format('SELECT cancel_task(%s)', :e_id), '42501', 'permission denied for function cancel_task',
    'Should refuse taskpool_worker cancel_task');
SELECT throws_ok(format('SELECT retry_task(%s)', :e_id), '42501', 'permission denied for function retry_task',
    'Should refuse taskpool_worker retry_task');
SELECT throws_ok('SELECT recover_stale_tasks(1)', '42501', 'permission denied for function recover_stale_tasks',
    'Should refuse taskpool_worker recover_stale_tasks');
SELECT throws_ok($$SELECT prune_tasks(interval '0')$$, '42501', 'permission denied for function prune_tasks',
    'Should refuse taskpool_worker prune_tasks');
SELECT throws_ok($$SELECT _enqueue_specs('[{"role": "priv_test_role"}]', NULL)$$,
    '42501', 'permission denied for function _enqueue_specs',
    'Should refuse taskpool_worker the internal _enqueue_specs');

-- A temporary table cannot stand in for worker_tasks inside the SECURITY DEFINER functions,
-- even first on the caller's search_path. The claim takes the task released above: ready now,
-- and of higher priority than the last one.
CREATE TEMP TABLE worker_tasks (id bigint, role text, status text, priority integer);
SET LOCAL search_path = pg_temp, public;
SELECT results_eq(
    $$SELECT id, role, attempt FROM claim_task('priv_test_role', 'w-priv')$$,
    format($$VALUES (%s::bigint, 'priv_test_role'::text, 2)$$, :d_id),
    'Should claim from public.worker_tasks even with a temporary worker_tasks first on the search_path');
RESET search_path;
DROP TABLE pg_temp.worker_tasks;

RESET ROLE;

SELECT is(current_user::text, 'postgres', 'Should be back to the superuser');
SELECT results_eq(
    format($$SELECT id, status, worker_id, retry_count, result FROM worker_tasks WHERE id IN (%s, %s, %s, %s, %s)
             ORDER BY id$$, :a_id, :b_id, :c_id, :d_id, :e_id),
    format($$VALUES (%s::bigint, 'completed'::text, 'w-priv'::text, 0, '{"ok": true}'::jsonb),
                    (%s, 'pending', NULL, 1, NULL),
                    (%s, 'pending', NULL, 0, NULL),
                    (%s, 'claimed', 'w-priv', 0, NULL),
                    (%s, 'pending', NULL, 0, NULL)$$, :a_id, :b_id, :c_id, :d_id, :e_id),
    'Should have recorded what taskpool_worker did through the functions');
SELECT results_eq(
    format($$SELECT task_id, attempt, worker_id, outcome, error_message FROM worker_task_attempts
             WHERE task_id IN (%s, %s, %s) ORDER BY task_id$$, :b_id, :c_id, :d_id),
    format($$VALUES (%s::bigint, 1, 'w-priv'::text, 'retried'::text, 'HTTP 503'::text),
                    (%s, 1, 'w-priv', 'released', NULL),
                    (%s, 1, 'w-priv', 'released', NULL)$$, :b_id, :c_id, :d_id),
    'Should have kept the attempts taskpool_worker ended');
SELECT results_eq(
    $$SELECT role, status FROM worker_tasks WHERE dedupe_key = 'priv:follow-up'$$,
    $$VALUES ('store_discovery'::text, 'pending'::text)$$,
    'Should have enqueued the follow-up of taskpool_worker''s completion');
SELECT is((SELECT scheduled_for FROM worker_tasks WHERE id = :c_id), now() + interval '1 hour',
          'Should have snoozed taskpool_worker''s task to the time it named');

SELECT * FROM finish();
ROLLBACK;
