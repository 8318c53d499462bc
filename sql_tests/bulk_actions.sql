-- bulk_actions: tasks_matching, retry_tasks and cancel_tasks: the tasks a filter selects,
-- acted on in bounded batches, with what retry_task and cancel_task would refuse left alone
-- (issue 17, item 5).
BEGIN;
SELECT plan(33);

\set written_tables '''{worker_tasks}'''

INSERT INTO task_roles (role, max_retries) VALUES ('t49_a', 0), ('t49_b', 0);
SELECT tests.make_store(name := 't49 store', platform := 't49_platform') AS store \gset

-- A task of role that failed with error, through the worker's own calls.
CREATE FUNCTION pg_temp.failed(role text, error text, dispensary_id integer DEFAULT NULL, dedupe_key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_task worker_tasks;
BEGIN
    PERFORM tests.make_task(role := failed.role, dispensary_id := failed.dispensary_id, priority := 100,
                            created_at := '2000-01-01 00:00:00+00', dedupe_key := failed.dedupe_key);
    SELECT * INTO v_task FROM claim_task(failed.role, 'w49');
    PERFORM fail_task(v_task.id, 'w49', v_task.attempt, tests.claim_token(v_task.id, v_task.attempt), failed.error, false);
    UPDATE worker_tasks t SET created_at = now() - interval '1 hour' WHERE t.id = v_task.id;
    RETURN v_task.id;
END;
$$;

INSERT INTO tests.fx (name, id) VALUES
    ('a_timeout_1', pg_temp.failed('t49_a', 'GET /menu: Timeout after 30 s')),
    ('a_timeout_2', pg_temp.failed('t49_a', 'read timeout')),
    ('a_parse', pg_temp.failed('t49_a', 'bad JSON at line 3')),
    ('b_timeout', pg_temp.failed('t49_b', 'timeout', dispensary_id := :store)),
    ('b_key_old', pg_temp.failed('t49_b', 'boom', dedupe_key := 't49-key')),
    ('b_key_new', pg_temp.failed('t49_b', 'boom', dedupe_key := 't49-key')),
    ('b_held_failed', pg_temp.failed('t49_b', 'boom', dedupe_key := 't49-held')),
    ('b_held_active', tests.make_task(role := 't49_b', dedupe_key := 't49-held')),
    ('a_pending_1', tests.make_task(role := 't49_a')),
    ('a_pending_2', tests.make_task(role := 't49_a'));

/****************************************************************************/
-- tasks_matching

SELECT set_eq($$SELECT f.name FROM tasks_matching(role := 't49_a', status := 'failed') m JOIN tests.fx f ON f.id = m.id$$,
    ARRAY['a_timeout_1', 'a_timeout_2', 'a_parse'], 'Should select by role and status');
SELECT set_eq($$SELECT f.name FROM tasks_matching(error_like := '%timeout%') m JOIN tests.fx f ON f.id = m.id$$,
    ARRAY['a_timeout_1', 'a_timeout_2', 'b_timeout'], 'Should select by an ILIKE pattern on the error, whatever its case');
SELECT set_eq($$SELECT f.name FROM tasks_matching(store := (SELECT d.id FROM dispensaries d WHERE d.name = 't49 store')) m JOIN tests.fx f ON f.id = m.id$$,
    ARRAY['b_timeout'], 'Should select by store');
SELECT set_eq($$SELECT f.name FROM tasks_matching(platform := 't49_platform') m JOIN tests.fx f ON f.id = m.id$$,
    ARRAY['b_timeout'], 'Should select by platform');
SELECT set_eq($$SELECT f.name FROM tasks_matching(role := 't49_a', created_before := now() - interval '30 minutes') m
                JOIN tests.fx f ON f.id = m.id$$,
    ARRAY['a_timeout_1', 'a_timeout_2', 'a_parse'], 'Should select by created_before');
SELECT set_eq($$SELECT f.name FROM tasks_matching(role := 't49_a', created_after := now() - interval '30 minutes') m
                JOIN tests.fx f ON f.id = m.id$$,
    ARRAY['a_pending_1', 'a_pending_2'], 'Should select by created_after');
SELECT throws_ok($$SELECT * FROM tasks_matching()$$, '22023',
    'give at least one filter: role, status, store, platform, error_like, created_before or created_after',
    'Should refuse a filter that selects every task');
SELECT throws_ok($$SELECT * FROM tasks_matching(status := 'done')$$, '22023', 'status ''done'' is not a task status',
    'Should refuse an unknown status');

/****************************************************************************/
-- retry_tasks

SELECT tests.rejects($$SELECT retry_tasks()$$, '22023',
    'give at least one filter: role, status, store, platform, error_like, created_before or created_after',
    'retry_tasks with no filter', tables := :written_tables);
SELECT tests.rejects($$SELECT retry_tasks(status := 'pending')$$, '22023',
    'retry_tasks retries failed or cancelled tasks, not pending ones', 'retry_tasks of pending tasks', tables := :written_tables);
SELECT tests.rejects($$SELECT retry_tasks(role := 't49_a', max_tasks := 0)$$, '22023',
    'max_tasks must be between 1 and 100000, not 0', 'retry_tasks with max_tasks 0', tables := :written_tables);

SELECT is(retry_tasks(error_like := '%timeout%', max_tasks := 2), 2, 'Should retry at most max_tasks a call');
SELECT results_eq(
    $$SELECT f.name, t.status, t.retry_count FROM worker_tasks t JOIN tests.fx f ON f.id = t.id
      WHERE f.name IN ('a_timeout_1', 'a_timeout_2', 'b_timeout') ORDER BY t.id$$,
    $$VALUES ('a_timeout_1'::text, 'pending'::text, 0), ('a_timeout_2', 'pending', 0), ('b_timeout', 'failed', 0)$$,
    'Should retry the lowest ids first and leave the rest for the next call');
SELECT is(retry_tasks(error_like := '%timeout%', max_tasks := 2), 1, 'Should retry the rest on the next call');
SELECT is(retry_tasks(error_like := '%timeout%', max_tasks := 2), 0, 'Should find nothing more to retry');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('a_parse')), 'failed',
    'Should leave a failed task the filter does not select');

SELECT is(retry_tasks(role := 't49_b'), 1, 'Should retry one task of a dedupe key and none whose key an active task holds');
SELECT results_eq(
    $$SELECT f.name, t.status FROM worker_tasks t JOIN tests.fx f ON f.id = t.id
      WHERE f.name IN ('b_key_old', 'b_key_new', 'b_held_failed') ORDER BY t.id$$,
    $$VALUES ('b_key_old'::text, 'failed'::text), ('b_key_new', 'pending'), ('b_held_failed', 'failed')$$,
    'Should retry the newest task of a dedupe key, and not a task whose key is held');
SELECT is(retry_tasks(role := 't49_b'), 0, 'Should not retry an older task of a key now active again');

/****************************************************************************/
-- cancel_tasks

SELECT tests.rejects($$SELECT cancel_tasks()$$, '22023',
    'give at least one filter: role, status, store, platform, error_like, created_before or created_after',
    'cancel_tasks with no filter', tables := :written_tables);
SELECT tests.rejects($$SELECT cancel_tasks(status := 'failed')$$, '22023',
    'cancel_tasks cancels pending, claimed or running tasks, not failed ones', 'cancel_tasks of failed tasks',
    tables := :written_tables);

SELECT tests.make_claimed_task(worker_id := 'w49_run', role := 't49_a', started := true) AS running \gset
SELECT is(cancel_tasks(role := 't49_a', max_tasks := 3), 3, 'Should cancel at most max_tasks a call');
SELECT is(cancel_tasks(role := 't49_a'), 2, 'Should cancel the rest on the next call');
SELECT is(cancel_tasks(role := 't49_a'), 0, 'Should not count a task whose cancel was already requested');
SELECT results_eq(
    $$SELECT status, count(*)::integer, count(cancel_requested_at)::integer FROM worker_tasks WHERE role = 't49_a'
      GROUP BY status ORDER BY status$$,
    $$VALUES ('cancelled'::text, 4, 0), ('failed', 1, 0), ('running', 1, 1)$$,
    'Should cancel pending tasks now and request the cancel of a running one, and leave a failed one');

/****************************************************************************/
-- Who may

SELECT function_privs_are('public', 'tasks_matching',
    ARRAY['text', 'text', 'bigint', 'text', 'text', 'timestamp with time zone', 'timestamp with time zone'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute tasks_matching');
SELECT function_privs_are('public', 'retry_tasks',
    ARRAY['text', 'text', 'bigint', 'text', 'text', 'timestamp with time zone', 'timestamp with time zone', 'integer'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute retry_tasks');
SELECT function_privs_are('public', 'cancel_tasks',
    ARRAY['text', 'text', 'bigint', 'text', 'text', 'timestamp with time zone', 'timestamp with time zone', 'integer'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute cancel_tasks');

SELECT * FROM finish();
ROLLBACK;
