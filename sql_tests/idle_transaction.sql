-- idle_transaction: a session that idles inside a transaction holding a worker's task is ended
-- by idle_in_transaction_session_timeout, set to the task's stale threshold for that transaction.
-- (That the server then ends the session is shown by the fault suite's scenario 14.)
BEGIN;
SELECT plan(10);

/****************************************************************************/
-- Structure
-- The limit lives in worker_tasks' one BEFORE trigger (issue 13: one call per row, not three).
SELECT trigger_is('worker_tasks', '_500_enforce_transition', 'tg_worker_tasks__enforce_transition',
    'Should limit idle transactions from the one BEFORE trigger');
SELECT ok(
    (SELECT tgattr::text = '' FROM pg_trigger
     WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_500_enforce_transition'),
    'Should fire it on every UPDATE, whichever columns it sets');

/****************************************************************************/
-- Behaviour
INSERT INTO task_roles (role, description, stale_threshold) VALUES
    ('t21_quick', 'pgTAP idle_transaction: short stale_threshold', '90 seconds');

SET LOCAL idle_in_transaction_session_timeout = 0;
SELECT tests.make_task(role := 't21_quick') AS pending_id \gset
SELECT cancel_task(:pending_id);
SELECT is(current_setting('idle_in_transaction_session_timeout'), '0',
    'Should leave the timeout alone for a change to a task no worker holds');

SELECT id AS task_id, attempt FROM tests.make_claimed_task(worker_id := 'w1', role := 't21_quick') \gset
SELECT is(current_setting('idle_in_transaction_session_timeout'), '90s',
    'Should set the timeout to the role''s stale threshold once a worker claims a task');

SET LOCAL idle_in_transaction_session_timeout = 0;
SELECT heartbeat_task(:task_id, 'w1', :attempt, tests.claim_token(:task_id, :attempt));
SELECT is(current_setting('idle_in_transaction_session_timeout'), '90s',
    'Should set it on a heartbeat, through the SECURITY DEFINER function');

SET LOCAL idle_in_transaction_session_timeout = 0;
SELECT status FROM start_task(:task_id, 'w1', :attempt, tests.claim_token(:task_id, :attempt));
SELECT is(current_setting('idle_in_transaction_session_timeout'), '90s',
    'Should set it when the task starts');

SET LOCAL idle_in_transaction_session_timeout = '5s';
SELECT status FROM complete_task(:task_id, 'w1', :attempt, tests.claim_token(:task_id, :attempt), '{}');
SELECT is(current_setting('idle_in_transaction_session_timeout'), '5s',
    'Should keep a stricter timeout already in force');

SET LOCAL idle_in_transaction_session_timeout = 0;
SELECT id AS other_id FROM tests.make_claimed_task(worker_id := 'w2', role := 'product_resync',
    dispensary_id := tests.make_store()) \gset
SELECT is(current_setting('idle_in_transaction_session_timeout'), '10min',
    'Should take the threshold of the task''s own role (product_resync: 10 minutes)');

SET LOCAL idle_in_transaction_session_timeout = '1h';
SELECT id AS third_id FROM tests.make_claimed_task(worker_id := 'w3', role := 't21_quick') \gset
SELECT is(current_setting('idle_in_transaction_session_timeout'), '1h',
    'Should keep any idle timeout already in force, even a looser one');

/****************************************************************************/
-- Privileges
SELECT ok(NOT has_function_privilege('taskpool_worker', 'tg_worker_tasks__enforce_transition()', 'execute'),
    'Should not grant the trigger function to taskpool_worker');

SELECT * FROM finish();
ROLLBACK;
