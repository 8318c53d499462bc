-- operator_complete_delete: an operator completes a task without a worker
-- (mark_task_completed) or deletes one (delete_task). A running task's worker is fenced out:
-- its completion, failure and heartbeat after the operator's call change nothing. Bad ids and
-- finished tasks are refused, naming them, and change nothing. Neither function is the workers'.
BEGIN;
SELECT plan(31);

INSERT INTO task_roles (role, description, max_retries) VALUES ('t67_role', 'pgTAP 67', 3);

/****************************************************************************/
-- Structure

SELECT has_function('public', 'mark_task_completed', ARRAY['bigint', 'jsonb'], 'Should have mark_task_completed(bigint, jsonb)');
SELECT function_returns('public', 'mark_task_completed', ARRAY['bigint', 'jsonb'], 'worker_tasks',
    'Should return the task row from mark_task_completed');
SELECT has_function('public', 'delete_task', ARRAY['bigint'], 'Should have delete_task(bigint)');
SELECT function_returns('public', 'delete_task', ARRAY['bigint'], 'worker_tasks', 'Should return the deleted row from delete_task');

/****************************************************************************/
-- mark_task_completed: pending, claimed and running tasks

SELECT tests.make_task(role := 't67_role') AS pending_id \gset
SELECT results_eq(
    format($$SELECT status, result, worker_id, completed_at IS NOT NULL FROM mark_task_completed(%s, '{"by": "hand"}')$$, :pending_id),
    $$VALUES ('completed'::text, '{"by": "hand"}'::jsonb, NULL::text, true)$$,
    'Should complete a pending task with the result given, with no worker');

SELECT * FROM tests.make_claimed_task(worker_id := 't67_w', role := 't67_role', started := true) \gset running_
SELECT results_eq(
    format($$SELECT status, result, worker_id, attempt, claim_token FROM mark_task_completed(%s)$$, :running_id),
    format($$VALUES ('completed'::text, NULL::jsonb, 't67_w'::text, %s, NULL::uuid)$$, :running_attempt),
    'Should complete a running task, keeping the worker that held it and clearing its claim_token');

SELECT throws_ok(
    format($$SELECT complete_task(%s, 't67_w', %s, %L, '{"by": "worker"}')$$, :running_id, :running_attempt, :'running_claim_token'),
    '55000', NULL,
    'Should refuse the completion of the worker that held the task: the operator''s stands');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 't67_w', %s, %L, 'too late')$$, :running_id, :running_attempt, :'running_claim_token'),
    '55000', NULL,
    'Should refuse that worker''s failure too');
SELECT is(heartbeat_task(:running_id, 't67_w', :running_attempt, :'running_claim_token'), 'lost',
    'Should answer lost to that worker''s heartbeat');
SELECT results_eq(
    format('SELECT status, result FROM worker_tasks WHERE id = %s', :running_id),
    $$VALUES ('completed'::text, NULL::jsonb)$$,
    'Should keep the operator''s completion after the worker''s calls');

SELECT * FROM tests.make_claimed_task(worker_id := 't67_w', role := 't67_role') \gset claimed_
SELECT is((mark_task_completed(:claimed_id, '[1, 2]')).status, 'completed', 'Should complete a claimed task');

/****************************************************************************/
-- mark_task_completed: what it refuses

SELECT throws_ok(format('SELECT mark_task_completed(%s)', :pending_id), '55000',
    format('task %s is completed and cannot be marked completed', :pending_id),
    'Should refuse a completed task (not a no-op: the first result stands)');
SELECT tests.make_task(role := 't67_role') AS to_cancel_id \gset
SELECT is((cancel_task(:to_cancel_id)).status, 'cancelled', 'Should cancel a pending task (fixture)');
SELECT throws_ok(format('SELECT mark_task_completed(%s)', :to_cancel_id), '55000',
    format('task %s is cancelled and cannot be marked completed', :to_cancel_id),
    'Should refuse a cancelled task');
SELECT is(tests.error_hint(format('SELECT mark_task_completed(%s)', :to_cancel_id)),
    'Only pending, claimed or running tasks can be; retry_task puts a failed or cancelled task back to pending.',
    'Should say which tasks can be completed');
SELECT throws_ok('SELECT mark_task_completed(-1)', 'P0002', 'task -1 does not exist', 'Should refuse an unknown id');
SELECT throws_ok('SELECT mark_task_completed(NULL)', '22004', 'task_id is required', 'Should refuse a NULL id');

/****************************************************************************/
-- delete_task

SELECT * FROM tests.make_claimed_task(worker_id := 't67_w', role := 't67_role', started := true) \gset doomed_
SELECT is((fail_task(:doomed_id, 't67_w', :doomed_attempt, :'doomed_claim_token', 'first try')).status, 'pending',
    'Should retry a failed attempt (fixture: an attempt in the history)');
UPDATE worker_tasks SET scheduled_for = now() - interval '1 minute' WHERE id = :doomed_id;
SELECT * FROM claim_and_start_tasks('t67_role', 't67_w2', 1) \gset doomed2_
SELECT is(:doomed2_id::bigint, :doomed_id::bigint, 'Should claim the task again (fixture)');
SELECT coalesce((SELECT total FROM task_metric_totals WHERE role = 't67_role' AND counter = 'attempts_retried'), 0) AS retried_before \gset
SELECT results_eq(
    format('SELECT id, status FROM delete_task(%s)', :doomed_id),
    format($$VALUES (%s::bigint, 'running'::text)$$, :doomed_id),
    'Should delete a running task and return it as it was');
SELECT is((SELECT count(*) FROM worker_tasks WHERE id = :doomed_id), 0::bigint, 'Should delete the task''s row');
SELECT is((SELECT count(*) FROM worker_task_attempts WHERE task_id = :doomed_id), 0::bigint, 'Should delete its attempt history');
SELECT is((SELECT total FROM task_metric_totals WHERE role = 't67_role' AND counter = 'attempts_retried'),
    (:retried_before + 1)::bigint,
    'Should keep its retried attempt in the counters, as a prune does');
SELECT is(heartbeat_task(:doomed_id, 't67_w2', :doomed2_attempt, :'doomed2_claim_token'), 'not_found',
    'Should answer not_found to the heartbeat of the worker that ran it');
SELECT throws_ok(
    format($$SELECT complete_task(%s, 't67_w2', %s, %L)$$, :doomed_id, :doomed2_attempt, :'doomed2_claim_token'),
    'P0002', format('task %s does not exist', :doomed_id),
    'Should refuse that worker''s completion: the task is gone');

SELECT is((delete_task(:pending_id)).status, 'completed', 'Should delete a completed task');
SELECT throws_ok(format('SELECT delete_task(%s)', :pending_id), 'P0002', format('task %s does not exist', :pending_id),
    'Should refuse an id deleted already');
SELECT throws_ok('SELECT delete_task(NULL)', '22004', 'task_id is required', 'Should refuse a NULL id');

/****************************************************************************/
-- Privileges: the operator's functions, not the workers'

SELECT tests.make_task(role := 't67_role') AS guarded_id \gset
SET ROLE taskpool_worker;
SELECT throws_ok(format('SELECT mark_task_completed(%s)', :guarded_id), '42501', NULL,
    'Should not let taskpool_worker complete a task by hand');
SELECT throws_ok(format('SELECT delete_task(%s)', :guarded_id), '42501', NULL,
    'Should not let taskpool_worker delete a task');
RESET ROLE;
SELECT is((SELECT status FROM worker_tasks WHERE id = :guarded_id), 'pending', 'Should have left the task as it was');

SELECT * FROM finish();
ROLLBACK;
