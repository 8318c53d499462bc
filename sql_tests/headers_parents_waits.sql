-- headers_parents_waits: worker_tasks.headers (enqueue checks them, the claim returns them),
-- parent_id (follow-ups remember the task that queued them; task_chain reads a chain back), and
-- the waits for a result (register_task_waits; a finish notifies only the sessions that wait).
-- SET CONSTRAINTS ALL IMMEDIATE runs the commit-time wake-ups at the end of each statement.
BEGIN;
SELECT plan(42);
SET CONSTRAINTS ALL IMMEDIATE;

INSERT INTO task_roles (role, requires_store, max_retries, description) VALUES
    ('t45', false, 0, 'pgTAP headers_parents_waits');

/****************************************************************************/
-- headers

SELECT is((SELECT headers FROM enqueue_task('t45', headers := '{"traceparent": "00-abc-def-01"}')),
          '{"traceparent": "00-abc-def-01"}'::jsonb, 'Should keep the headers enqueue_task is given');
SELECT is((SELECT headers FROM enqueue_task('t45')), NULL, 'Should store no headers as NULL');
SELECT is((SELECT headers FROM enqueue_task('t45', headers := '{}')), NULL, 'Should store empty headers as NULL');
SELECT results_eq(
    $$SELECT headers FROM enqueue_tasks('[{"role": "t45", "headers": {"a": "1", "b": "2"}},
                                          {"role": "t45", "headers": {}}, {"role": "t45"}]') ORDER BY id$$,
    $$VALUES ('{"a": "1", "b": "2"}'::jsonb), (NULL), (NULL)$$,
    'Should keep the headers of enqueue_tasks'' specs, none as NULL');
-- the lean path's checks and _enqueue_specs' agree: headers on the slow path (a bad priority elsewhere is not it)
SELECT is((SELECT headers FROM enqueue_task('t45', '{"x": 1}', dedupe_key := 't45:h', headers := '{"k": "v"}')),
          '{"k": "v"}'::jsonb, 'Should keep headers with a dedupe key');

SELECT tests.rejects($$SELECT enqueue_task('t45', headers := '{"n": 1}')$$,
    '22023', 'header "n" must be a string, not number', 'a header that is not a string');
SELECT tests.rejects($$SELECT enqueue_task('t45', headers := '["traceparent"]')$$,
    '22023', 'headers must be a JSON object of strings, not array', 'headers that are not an object');
SELECT tests.rejects($$SELECT enqueue_tasks('[{"role": "t45"}, {"role": "t45", "headers": {"": "x"}}]')$$,
    '22023', 'tasks[1]: header name "" must have 1 to 100 characters', 'an empty header name, naming the spec');
SELECT tests.rejects(
    $$SELECT enqueue_task('t45', headers := (SELECT jsonb_object_agg('h' || i, 'v') FROM generate_series(1, 33) i))$$,
    '22023', 'headers has 33 entries; at most 32 are allowed', 'more than 32 headers');
SELECT tests.rejects(
    $$SELECT enqueue_task('t45', headers := jsonb_build_object('big', repeat('x', 9000)))$$,
    '22023', 'headers are 9011 bytes; at most 8192 are allowed', 'headers over 8192 bytes');

-- the claim returns them
SELECT is((SELECT headers FROM claim_and_start_tasks('t45', 'w45', 1)),
          '{"traceparent": "00-abc-def-01"}'::jsonb, 'Should return the headers with the claimed task');

/****************************************************************************/
-- parent_id and task_chain

DELETE FROM worker_tasks WHERE role = 't45';
SELECT tests.make_store(name := 't45 store') AS store_a \gset

-- complete_task's follow_ups
SELECT id AS root_id FROM tests.make_claimed_task(worker_id := 'w45', role := 'store_discovery') \gset
SELECT is((SELECT parent_id FROM worker_tasks WHERE id = :root_id), NULL, 'Should give an enqueued task no parent');
SELECT status FROM complete_task(:root_id, 'w45', 1, tests.claim_token(:root_id, 1), jsonb_build_object('newStoreIds', jsonb_build_array(:store_a)),
    follow_ups := '[{"role": "t45", "payload": {"n": 1}}]') \gset
SELECT bag_eq(
    format('SELECT role, parent_id FROM worker_tasks WHERE parent_id = %s', :root_id),
    format('VALUES (%L, %s), (%L, %s)', 'product_discovery', :root_id, 't45', :root_id),
    'Should give follow-ups and chained tasks the completed task as parent');
SELECT id AS child_id FROM worker_tasks WHERE parent_id = :root_id AND role = 't45' \gset
SELECT id AS chained_id FROM worker_tasks WHERE parent_id = :root_id AND role = 'product_discovery' \gset

-- complete_tasks' follow_ups
UPDATE worker_tasks SET priority = 100 WHERE id = :child_id;
SELECT id AS claimed_child FROM claim_and_start_tasks('t45', 'w45', 1) \gset
SELECT is(:claimed_child::bigint, :child_id::bigint, 'Should claim the follow-up');
SELECT status FROM complete_tasks('w45', tests.with_claim_tokens(format('[{"task_id": %s, "attempt": 1, "result": {},
    "follow_ups": [{"role": "t45"}, {"role": "t45"}]}]', :child_id)::jsonb)) \gset
SELECT is((SELECT count(*)::int FROM worker_tasks WHERE parent_id = :child_id), 2,
    'Should give complete_tasks'' follow-ups their task as parent');

-- product_resync -> product_refresh through the trigger
SELECT id AS resync_id FROM tests.make_claimed_task(worker_id := 'w45', role := 'product_resync', dispensary_id := :store_a) \gset
SELECT status FROM complete_task(:resync_id, 'w45', 1, tests.claim_token(:resync_id, 1), '{"payload_id": 7}') \gset
SELECT is((SELECT parent_id FROM worker_tasks WHERE role = 'product_refresh' AND payload = '{"payload_id": 7}'),
          :resync_id::bigint, 'Should give product_refresh its product_resync as parent');

SELECT results_eq(
    format('SELECT id, depth, parent_id FROM task_chain(%s)', :root_id),
    -- the chained product_discovery is queued by the trigger, before complete_task's follow_ups
    format('SELECT * FROM (VALUES (%s::bigint, 0, NULL::bigint), (%s, 1, %s), (%s, 1, %s)) v
            UNION ALL (SELECT id, 2, parent_id FROM worker_tasks WHERE parent_id = %s ORDER BY id)',
           :root_id, :chained_id, :root_id, :child_id, :root_id, :child_id),
    'Should list a chain from the task down, each follow-up right under its parent');
SELECT results_eq(
    format('SELECT id, depth FROM task_chain(%s) WHERE depth <= 0', (SELECT min(id) FROM worker_tasks WHERE parent_id = :child_id)),
    format('VALUES (%s::bigint, -2), (%s::bigint, -1), (%s::bigint, 0)', :root_id, :child_id,
           (SELECT min(id) FROM worker_tasks WHERE parent_id = :child_id)),
    'Should list a task''s ancestors, oldest first, above it');
SELECT is_empty('SELECT * FROM task_chain(-1)', 'Should list no chain for a task that does not exist');

-- pruning a parent leaves its follow-ups without one
UPDATE worker_tasks SET completed_at = completed_at - interval '30 days' WHERE id = :resync_id;
SELECT ok(prune_tasks(interval '7 days') >= 1, 'Should prune the old parent');
SELECT is((SELECT parent_id FROM worker_tasks WHERE role = 'product_refresh' AND payload = '{"payload_id": 7}'),
          NULL, 'Should set a pruned parent''s follow-ups'' parent_id to NULL');

/****************************************************************************/
-- waits

SELECT is(task_wait_channel(), 'taskpool_task_done_' || pg_backend_pid(), 'Should name the session''s channel by its pid');

SELECT id AS w1 FROM enqueue_task('t45', '{"w": 1}') \gset
SELECT id AS w2 FROM enqueue_task('t45', '{"w": 2}') \gset
SELECT results_eq(
    format('SELECT task_id, status, watched FROM register_task_waits(ARRAY[%s, %s, -1])', :w1, :root_id),
    format('VALUES (%s::bigint, %L, false), (%s::bigint, %L, true)', :root_id, 'completed', :w1, 'pending'),
    'Should watch an unfinished task, report a finished one unwatched, skip a missing one');
SELECT is((SELECT waited FROM worker_tasks WHERE id = :w1), true, 'Should mark the task waited');
SELECT is((SELECT waited FROM worker_tasks WHERE id = :w2), NULL, 'Should leave a task nobody waits for unmarked');
SELECT results_eq(
    format('SELECT task_id, backend_pid FROM task_result_waits WHERE task_id IN (%s, %s)', :w1, :root_id),
    format('VALUES (%s::bigint, pg_backend_pid())', :w1),
    'Should register the session for the unfinished task only');
SELECT results_eq(
    format('SELECT task_id, watched FROM register_task_waits(ARRAY[%s])', :w1),
    format('VALUES (%s::bigint, true)', :w1),
    'Should take a second registration of the same task');
SELECT is((SELECT count(*)::int FROM task_result_waits WHERE task_id = :w1), 1, 'Should register a session once per task');

-- with descendants: the chain below the task
SELECT set_eq(
    format('SELECT task_id FROM register_task_waits(ARRAY[%s], descendants := true)', :root_id),
    format('SELECT id FROM task_chain(%s) WHERE depth >= 0', :root_id),
    'Should take the task and every follow-up below it with descendants');
SELECT set_eq(
    format('SELECT task_id FROM task_result_waits WHERE task_id IN (SELECT id FROM task_chain(%s))', :root_id),
    format('SELECT id FROM task_chain(%s) WHERE depth >= 0 AND status NOT IN (%L, %L, %L)', :root_id,
           'completed', 'failed', 'cancelled'),
    'Should register the unfinished members of the chain');

-- a finish of a waited task removes its waits (after notifying them); of another, nothing
SELECT status FROM cancel_task(:w2) \gset
SELECT status FROM cancel_task(:w1) \gset
SELECT is((SELECT count(*)::int FROM task_result_waits WHERE task_id = :w1), 0,
    'Should take the waits of a task out when it finishes');
SELECT id AS w3 FROM enqueue_task('t45', '{"w": 3}') \gset
SELECT task_id FROM register_task_waits(ARRAY[:w3]) \gset
SELECT id, attempt FROM claim_and_start_tasks('t45', 'w45b', 10) WHERE id = :w3 \gset claimed_
SELECT status FROM complete_task(:w3, 'w45b', :claimed_attempt, tests.claim_token(:w3, :claimed_attempt), NULL) \gset
SELECT is((SELECT count(*)::int FROM task_result_waits WHERE task_id = :w3), 0,
    'Should take the waits out at a completion with no result (the WHEN clause passes a waited task)');

-- unregister, and the waits of sessions that ended
SELECT id AS w4 FROM enqueue_task('t45', '{"w": 4}') \gset
SELECT task_id FROM register_task_waits(ARRAY[:w4]) \gset
SELECT is(unregister_task_waits(ARRAY[:w4]), 1, 'Should end the session''s wait for a task');
SELECT is(unregister_task_waits(), (SELECT count(*)::int FROM task_result_waits WHERE backend_pid = pg_backend_pid()),
    'Should end all the session''s waits');
INSERT INTO task_result_waits (task_id, backend_pid) VALUES (:w4, 2147483647);
SELECT task_id FROM register_task_waits(ARRAY[:w4]) \gset
SELECT is((SELECT count(*)::int FROM task_result_waits WHERE backend_pid = 2147483647), 0,
    'Should prune the waits of a session that ended');

SELECT throws_ok($$SELECT register_task_waits(NULL)$$, '22023', 'task_ids must be an array of task ids, not NULL',
    'Should refuse a NULL list of tasks');
SELECT throws_ok($$SELECT register_task_waits(array_fill(1::bigint, ARRAY[10001]))$$, '54000',
    'task_ids has 10001 ids; at most 10000 go in one call', 'Should refuse more than 10000 tasks');

SELECT * FROM finish();
ROLLBACK;
