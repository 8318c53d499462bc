-- 35_prune_dry_run_and_resync_skips: what the operator CLI needs to say what it did (issue 12,
-- item 11). count_prunable_tasks counts what prune_tasks would delete, deleting nothing;
-- prune_tasks_in_batches prunes a batch a transaction; generate_resync_plan plans a day as
-- generate_resync_tasks does and says why it skipped the stores it did not plan.
BEGIN;
SELECT plan(38);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t35_prune', 'pgTAP 35_prune_dry_run_and_resync_skips: prune', 3);

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
SELECT has_function('public', 'generate_resync_plan', ARRAY['integer', 'date', 'text', 'integer'],
    'Should have generate_resync_plan(batches, day, time_zone, priority)');
SELECT volatility_is('public', 'generate_resync_plan', ARRAY['integer', 'date', 'text', 'integer'], 'volatile',
    'Should make generate_resync_plan VOLATILE (it writes)');

/****************************************************************************/
-- count_prunable_tasks: the dry run

-- Finished long ago: completed 4 days, failed 3 days, cancelled 2 days. Finished an hour ago:
-- one completed. Active with old heartbeats: one claimed.
SELECT c.id AS old_completed_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt) AS c \gset
SELECT f.id AS old_failed_id
FROM tests.make_claimed_task(role := 't35_prune') AS m,
     fail_task(m.id, m.worker_id, m.attempt, 'permanent', retryable := false) AS f \gset
SELECT c.id AS old_cancelled_id
FROM tests.make_task(role := 't35_prune') AS t(id), cancel_task(t.id) AS c \gset
SELECT c.id AS new_completed_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt) AS c \gset
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
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt) AS c \gset
SELECT c.id AS oldest_id
FROM tests.make_claimed_task(role := 't35_prune') AS m, complete_task(m.id, m.worker_id, m.attempt) AS c \gset
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
-- generate_resync_plan: the stores it planned and the ones it skipped, by reason

-- Only this file's stores are active while it runs (this rolls back).
UPDATE dispensaries SET active = false WHERE active;
SELECT tests.make_store(name := 't35 a') AS store_a \gset
SELECT tests.make_store(name := 't35 b') AS store_b \gset
SELECT tests.make_store(name := 't35 c') AS store_c \gset
SELECT tests.make_store(name := 't35 closed', active := false) AS store_closed \gset

SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-01', 'UTC')$$,
    $$VALUES (3, 0, 0)$$,
    'Should plan every active store of a new day, skipping none');
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-01', 'UTC')$$,
    $$VALUES (0, 3, 0)$$,
    'Should skip every store of a day planned before, as already planned');
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-02', 'UTC')$$,
    $$VALUES (0, 0, 3)$$,
    'Should skip the stores of a new day whose resync of the day before is still pending, as under way');

SELECT tests.make_store(name := 't35 d') AS store_d \gset
SELECT status AS s FROM cancel_task((SELECT id FROM worker_tasks WHERE dispensary_id = :store_a AND role = 'product_resync')) \gset
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-02', 'UTC')$$,
    $$VALUES (2, 0, 2)$$,
    'Should plan the stores that are free, and count the others by reason');
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-02', 'UTC')$$,
    $$VALUES (0, 2, 2)$$,
    'Should count a store both planned and under way as already planned, once');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dispensary_id = :store_closed), 0::bigint,
    'Should neither plan nor count an inactive store');
SELECT is(generate_resync_tasks(2, date '2030-01-03', 'UTC'), 0,
    'Should leave generate_resync_tasks returning the count generate_resync_plan creates');
SELECT is((SELECT count(*) FROM resync_plan_entries WHERE day = date '2030-01-02'), 2::bigint,
    'Should record the stores it planned in resync_plan_entries');
SELECT throws_ok($$SELECT * FROM generate_resync_plan(2, date '2030-01-01', 'Mars/Olympus_Mons')$$, '22023',
    'unknown time zone ''Mars/Olympus_Mons''',
    'Should refuse bad input as generate_resync_tasks does');

/****************************************************************************/
-- privileges

SELECT function_privs_are('public', 'count_prunable_tasks', ARRAY['interval'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker execute count_prunable_tasks');
SELECT function_privs_are('public', 'generate_resync_plan', ARRAY['integer', 'date', 'text', 'integer'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute generate_resync_plan');
SELECT ok(NOT has_function_privilege('taskpool_worker',
                                     'prune_tasks_in_batches(interval, integer, integer, bigint)', 'EXECUTE'),
    'Should not let taskpool_worker call prune_tasks_in_batches');

SELECT * FROM finish();
ROLLBACK;
