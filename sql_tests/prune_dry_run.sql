-- prune_dry_run: what the operator CLI needs to say what it did (issue 12, item 11).
-- count_prunable_tasks counts what prune_tasks would delete, deleting nothing;
-- prune_tasks_in_batches prunes a batch a transaction. (The resync skips, the crawler's, are in
-- crawler/sql_tests/resync_plan_skips.sql.)
BEGIN;
SELECT plan(26);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t35_prune', 'pgTAP prune_dry_run: prune', 3);

/****************************************************************************/
-- structure

SELECT has_function('public', 'count_prunable_tasks', ARRAY['interval'],
    'Should have count_prunable_tasks(older_than)');
SELECT function_returns('public', 'count_prunable_tasks', ARRAY['interval'], 'bigint',
    'Should return a bigint count from count_prunable_tasks');
SELECT volatility_is('public', 'count_prunable_tasks', ARRAY['interval'], 'stable',
    'Should make count_prunable_tasks STABLE (it only reads)');
SELECT is_procedure('public', 'prune_tasks_in_batches', ARRAY['interval', 'integer', 'integer', 'bigint'],
    'Should have the procedure prune_tasks_in_batches(older_than, batch_size, max_tasks, pruned)');

/****************************************************************************/
-- count_prunable_tasks: the dry run

-- Finished long ago: completed 4 days, failed 3 days, cancelled 2 days. Finished an hour ago:
-- one completed. Active with old heartbeats: one claimed.
SELECT c.id AS old_completed_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT f.id AS old_failed_id
FROM tests.make_claimed_task(role := 't35_prune') AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'permanent', retryable := false) AS f \gset
SELECT c.id AS old_cancelled_id
FROM tests.make_task(role := 't35_prune') AS t(id), cancel_task(t.id) AS c \gset
SELECT c.id AS new_completed_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT id AS old_claimed_id FROM tests.make_claimed_task(role := 't35_prune') \gset
SELECT tests.age_completion(:old_completed_id, interval '4 days') AS aged \gset
SELECT tests.age_completion(:old_failed_id, interval '3 days') AS aged \gset
SELECT tests.age_completion(:old_cancelled_id, interval '2 days') AS aged \gset
SELECT tests.age_completion(:new_completed_id, interval '1 hour') AS aged \gset
SELECT tests.age_heartbeat(:old_claimed_id, interval '5 days') AS aged \gset

SELECT is(count_prunable_tasks(interval '1 day'), 3::bigint,
    'Should count the completed, failed and cancelled tasks finished longer ago than the age');
SELECT is(count_prunable_tasks(interval '0'), 4::bigint,
    'Should count every finished task for an age of 0, and no active one');
SELECT is(count_prunable_tasks(interval '2 days 12 hours'), 2::bigint,
    'Should leave out the tasks that finished less long ago');
SELECT is(count_prunable_tasks(interval '300000 years'), 0::bigint,
    'Should count nothing for an age older than any timestamp, as prune_tasks prunes nothing');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't35_prune'), 5::bigint,
    'Should have deleted nothing while counting');
SELECT throws_ok($$SELECT count_prunable_tasks(interval '-1 day')$$, '22023',
    'older_than must be a non-negative interval, not -1 days',
    'Should refuse a negative age as prune_tasks does');
SELECT throws_ok($$SELECT count_prunable_tasks(NULL)$$, '22023',
    'older_than must be a non-negative interval, not NULL',
    'Should refuse a NULL age as prune_tasks does');
SELECT count_prunable_tasks(interval '2 days 12 hours') AS counted \gset
SELECT is(prune_tasks(interval '2 days 12 hours'), :counted,
    'Should have counted what prune_tasks then deletes');
SELECT is(count_prunable_tasks(interval '2 days 12 hours'), 0::bigint,
    'Should count nothing once those tasks are pruned');

/****************************************************************************/
-- prune_tasks_in_batches (inside this test's transaction: one batch at most; pytest runs it
-- outside one, batch after batch)

SELECT throws_ok($$CALL prune_tasks_in_batches(interval '1 day', batch_size := 0)$$, '22023',
    'batch_size must be positive, not 0', 'Should refuse a batch size of 0');
SELECT throws_ok($$CALL prune_tasks_in_batches(interval '1 day', batch_size := NULL)$$, '22023',
    'batch_size must be positive, not NULL', 'Should refuse a NULL batch size (an unbounded batch)');
SELECT throws_ok($$CALL prune_tasks_in_batches(interval '1 day', max_tasks := 0)$$, '22023',
    'max_tasks must be positive, not 0', 'Should refuse max_tasks 0 as prune_tasks does');
SELECT throws_ok($$CALL prune_tasks_in_batches(interval '-1 day')$$, '22023',
    'older_than must be a non-negative interval, not -1 days', 'Should refuse a negative age');

-- Two more old finished tasks, for three in all: the cancelled one (2 days), these (5 and 6 days).
SELECT c.id AS older_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT c.id AS oldest_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT tests.age_completion(:older_id, interval '5 days') AS aged \gset
SELECT tests.age_completion(:oldest_id, interval '6 days') AS aged \gset

SELECT throws_ok($$CALL prune_tasks_in_batches(interval '1 day', batch_size := 3)$$, '2D000', NULL,
    'Should commit after a full batch, which a transaction block refuses');
SELECT is(count_prunable_tasks(interval '1 day'), 3::bigint,
    'Should have pruned nothing when the commit was refused');

CREATE FUNCTION pg_temp.prune_in_batches(older_than interval, batch_size integer, max_tasks integer DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_pruned bigint;
BEGIN
    CALL prune_tasks_in_batches(prune_in_batches.older_than, prune_in_batches.batch_size,
                                prune_in_batches.max_tasks, v_pruned);
    RETURN v_pruned;
END;
$$;

SELECT is(pg_temp.prune_in_batches(interval '1 day', 10, max_tasks := 2), 2::bigint,
    'Should stop at max_tasks, without a commit when it fits in one batch');
SELECT set_eq(format('SELECT id FROM worker_tasks WHERE id IN (%s, %s, %s)', :oldest_id, :older_id, :old_cancelled_id),
    ARRAY[:old_cancelled_id::bigint],
    'Should prune the oldest finished tasks first');
SELECT is(pg_temp.prune_in_batches(interval '1 day', 10), 1::bigint,
    'Should prune what is left in a batch that comes back short, and say how many');
SELECT is(pg_temp.prune_in_batches(interval '1 day', 10), 0::bigint,
    'Should prune nothing when nothing is old enough');
SELECT set_eq($$SELECT id FROM worker_tasks WHERE role = 't35_prune'$$,
    ARRAY[:new_completed_id::bigint, :old_claimed_id],
    'Should keep the recently finished task and the active one');

/****************************************************************************/
-- privileges

SELECT function_privs_are('public', 'count_prunable_tasks', ARRAY['interval'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute count_prunable_tasks');
SELECT ok(NOT has_function_privilege('taskpool_worker',
                                     'prune_tasks_in_batches(interval, integer, integer, bigint)', 'EXECUTE'),
    'Should not let taskpool_worker call prune_tasks_in_batches');

SELECT * FROM finish();
ROLLBACK;
