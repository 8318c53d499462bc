-- task_history: the hot table and the partitioned history (issue 31). Finished tasks move from
-- worker_tasks to worker_task_history (move_tasks_to_history, the tick) once they finished
-- history_after ago and the metrics folded them; worker_tasks_with_history reads both; counts
-- read task_history_counts; retention drops whole leaves; retry, delete, task_chain and
-- task_spec_runs find a task wherever it is.
BEGIN;
SELECT plan(61);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t_history', 'pgTAP task history', 3),
    ('t_history_child', 'pgTAP task history: follow-ups', 3),
    ('t_history_spec', 'pgTAP task history: chains and replays', 3);

/****************************************************************************/
-- structure

SELECT has_table('public', 'worker_task_history', 'Should have table worker_task_history');
SELECT has_table('public', 'worker_task_attempt_history', 'Should have table worker_task_attempt_history');
SELECT has_table('public', 'task_history_counts', 'Should have table task_history_counts');
SELECT has_view('public', 'worker_tasks_with_history', 'Should have view worker_tasks_with_history');
SELECT is((SELECT p.partstrat FROM pg_partitioned_table p WHERE p.partrelid = 'worker_task_history'::regclass)::text,
          'r', 'Should partition the history by range (of completed_at)');
SELECT is((SELECT p.partstrat FROM pg_partitioned_table p WHERE p.partrelid = 'worker_task_attempt_history'::regclass)::text,
          'r', 'Should partition the attempts'' history by range (of their task''s completed_at)');
SELECT is((SELECT history_after FROM task_history_settings), interval '5 minutes',
          'Should move finished tasks after 5 minutes by default');
SELECT ok(NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conname = 'worker_tasks_parent_id_fkey'),
          'Should not enforce parent_id as a foreign key (a parent may be in the history)');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'move_tasks_to_history(integer)', 'EXECUTE'),
          'Should not let taskpool_worker move tasks');

/****************************************************************************/
-- settings: bad input is refused and changes nothing

SELECT throws_ok($$SELECT set_task_history(history_after := interval '-1 second')$$, '22023',
    'history_after must be from 0 to 100 years, not -00:00:01', 'Should refuse a negative history_after');
SELECT throws_ok($$SELECT set_task_history(batch_size := 0)$$, '22023',
    'batch_size must be from 1 to 100000, not 0', 'Should refuse a batch_size of 0');
SELECT throws_ok($$SELECT set_task_history(max_batches := 1001)$$, '22023',
    'max_batches must be from 1 to 1000, not 1001', 'Should refuse more than 1000 batches a tick');
SELECT throws_ok($$SELECT move_tasks_to_history(0)$$, '22023',
    'max_batches must be positive, not 0', 'Should refuse to move 0 batches');
SELECT results_eq($$SELECT history_after, batch_size, max_batches FROM task_history_settings$$,
    $$VALUES (interval '5 minutes', 10000, 10)$$, 'Should have changed no setting on bad input');
SELECT results_eq($$SELECT history_after, batch_size FROM set_task_history(history_after := interval '0', batch_size := 2)$$,
    $$VALUES (interval '0', 2)$$, 'Should set history_after to 0 and a batch size, and return the settings');
SELECT is((SELECT max_batches FROM task_history_settings), 10, 'Should leave a setting given as NULL as it is');

/****************************************************************************/
-- fixtures: finished tasks of every status at several ages, live work, a task in its dedupe window

CREATE TEMP TABLE th (name text PRIMARY KEY, id bigint);
CREATE FUNCTION pg_temp.plan_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_line text;
    v_plan text := '';
BEGIN
    FOR v_line IN EXECUTE 'EXPLAIN ' || query LOOP
        v_plan := v_plan || v_line || E'\n';
    END LOOP;
    RETURN v_plan;
END;
$$;
CREATE FUNCTION pg_temp.finish(name text, outcome text, age interval, payload jsonb DEFAULT '{}',
                                role text DEFAULT 't_history') RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF outcome = 'cancelled' THEN
        v_id := tests.make_task(role := finish.role, payload := payload);
        PERFORM cancel_task(v_id);
    ELSE
        SELECT m.id INTO v_id FROM tests.make_claimed_task(role := finish.role, worker_id := 'wh') m;
        UPDATE worker_tasks t SET payload = finish.payload WHERE t.id = v_id;
        IF outcome = 'completed' THEN
            PERFORM complete_task(v_id, 'wh', 1, tests.claim_token(v_id, 1));
        ELSE
            -- a retried attempt first, so that the task has attempt rows to move
            PERFORM fail_task(v_id, 'wh', 1, tests.claim_token(v_id, 1), 'first try', retryable := true);
            UPDATE worker_tasks t SET scheduled_for = now() - interval '1 day' WHERE t.id = v_id;
            PERFORM claim_task(finish.role, 'wh');
            PERFORM fail_task(v_id, 'wh', 2, tests.claim_token(v_id, 2), 'for good', retryable := false);
        END IF;
    END IF;
    PERFORM tests.age_completion(v_id, age);
    INSERT INTO th VALUES (name, v_id);
    RETURN v_id;
END;
$$;

SELECT pg_temp.finish('completed_1h', 'completed', '1 hour', '{"n": 1}'),
       pg_temp.finish('completed_9d', 'completed', '9 days'),
       pg_temp.finish('failed_2d', 'failed', '2 days'),
       pg_temp.finish('cancelled_10m', 'cancelled', '10 minutes');
INSERT INTO th SELECT 'pending', tests.make_task(role := 't_history');
INSERT INTO th SELECT 'windowed', t.id
FROM enqueue_task('t_history', '{"w": 1}', dedupe_key := 'th-window', dedupe_window := interval '366 days') t;
SELECT cancel_task(w.id) FROM th w WHERE w.name = 'windowed';
SELECT tests.age_completion((SELECT id FROM th WHERE name = 'windowed'), '1 hour');

CREATE TEMP TABLE counts_before AS SELECT * FROM v_task_counts WHERE role = 't_history';

-- the metrics fold everything finished up to a minute ago; a task finished since stays behind
UPDATE task_metric_watermark SET folded_before = now() - interval '1 minute';
SELECT pg_temp.finish('completed_now', 'completed', '0 seconds');

/****************************************************************************/
-- the move

SELECT is(move_tasks_to_history(), 4::bigint,
    'Should move the four finished and folded tasks, two a batch, and say how many');
SELECT set_eq($$SELECT id FROM worker_task_history$$,
    $$SELECT id FROM th WHERE name IN ('completed_1h', 'completed_9d', 'failed_2d', 'cancelled_10m')$$,
    'Should hold the moved tasks in the history');
SELECT ok(NOT EXISTS (SELECT FROM worker_tasks t JOIN worker_task_history h USING (id)),
    'Should have deleted the moved tasks from worker_tasks');
SELECT set_eq($$SELECT t.id FROM worker_tasks t WHERE t.role = 't_history'$$,
    $$SELECT id FROM th WHERE name IN ('pending', 'windowed', 'completed_now')$$,
    'Should keep live work, a task in its dedupe window and one newer than the watermark in worker_tasks');
SELECT is((SELECT count(*) FROM worker_task_attempt_history a WHERE a.task_id = (SELECT id FROM th WHERE name = 'failed_2d')),
    2::bigint, 'Should move a task''s attempts with it');
SELECT ok(NOT EXISTS (SELECT FROM worker_task_attempts a JOIN worker_task_history h ON h.id = a.task_id),
    'Should leave no attempt of a moved task in worker_task_attempts');
SELECT has_table('public', 'worker_task_history_' || to_char((now() - interval '9 days') AT TIME ZONE 'UTC', 'YYYYMMDD') || '_completed',
    'Should have created the leaf of the day and status of the oldest task');
SELECT is((SELECT h.spec_hash FROM worker_task_history h WHERE h.id = (SELECT id FROM th WHERE name = 'completed_1h')),
    task_spec_hash('t_history', NULL, '{"n": 1}'), 'Should store the spec hash of a moved task');
SELECT results_eq($$SELECT status, sum(tasks)::bigint FROM task_history_counts WHERE role = 't_history' GROUP BY status ORDER BY status$$,
    $$VALUES ('cancelled', 1::bigint), ('completed', 2::bigint), ('failed', 1::bigint)$$,
    'Should count the moved tasks per day, status and role');
SELECT set_eq($$SELECT role, status, tasks FROM v_task_counts WHERE role = 't_history' AND status <> 'completed'$$,
    $$SELECT role, status, tasks FROM counts_before WHERE status <> 'completed'$$,
    'Should count the same tasks by status in v_task_counts after the move');
SELECT is((SELECT tasks FROM v_task_counts WHERE role = 't_history' AND status = 'completed'), 3::bigint,
    'Should count completed tasks in worker_tasks and in the history alike');
SELECT is((SELECT value FROM taskpool_metrics() WHERE metric = 'taskpool_tasks' AND labels = '{"role": "t_history", "status": "cancelled"}'),
    2::double precision, 'Should count cancelled tasks of the history in taskpool_metrics');
SELECT results_eq($$SELECT in_history, count(*) FROM worker_tasks_with_history WHERE role = 't_history' GROUP BY in_history ORDER BY in_history$$,
    $$VALUES (false, 3::bigint), (true, 4::bigint)$$, 'Should show every task once in worker_tasks_with_history');
SELECT is(move_tasks_to_history(), 0::bigint, 'Should move nothing more');
SELECT is((SELECT count(*) FROM _tasks_filtered(role := 't_history', status := 'failed')), 1::bigint,
    'Should find a failed task of the history with tasks_matching''s filters');

/****************************************************************************/
-- the move is no deletion on the stream of task changes, nor for the history's readers

SELECT lives_ok($$SELECT _create_task_history_partitions(ARRAY[current_date, current_date])$$,
    'Should create a day''s partitions once, whatever it is asked');
SELECT is((SELECT count(*) FROM pg_inherits i WHERE i.inhparent = ('worker_task_history_' || to_char(current_date, 'YYYYMMDD'))::regclass),
    3::bigint, 'Should create a leaf per finished status under a day');

/****************************************************************************/
-- retry and delete find a task in the history

SELECT results_eq($$SELECT status, retry_count FROM retry_task((SELECT id FROM th WHERE name = 'failed_2d'))$$,
    $$VALUES ('pending', 0)$$, 'Should retry a failed task of the history: pending again');
SELECT ok(EXISTS (SELECT FROM worker_tasks t WHERE t.id = (SELECT id FROM th WHERE name = 'failed_2d'))
          AND NOT EXISTS (SELECT FROM worker_task_history h WHERE h.id = (SELECT id FROM th WHERE name = 'failed_2d')),
    'Should put a retried task back into worker_tasks, with its id');
SELECT is((SELECT count(*) FROM worker_task_attempts a WHERE a.task_id = (SELECT id FROM th WHERE name = 'failed_2d')),
    2::bigint, 'Should bring its attempts back with it');
SELECT is((SELECT sum(tasks) FROM task_history_counts WHERE role = 't_history' AND status = 'failed'), 0::numeric,
    'Should take a retried task out of the history''s counts');
SELECT throws_ok($$SELECT retry_task((SELECT id FROM th WHERE name = 'completed_1h'))$$, '55000',
    format('task %s is completed and cannot be retried', (SELECT id FROM th WHERE name = 'completed_1h')),
    'Should refuse to retry a completed task of the history, as in worker_tasks');
SELECT is(retry_tasks(role := 't_history', status := 'cancelled'), 2,
    'Should retry the cancelled tasks of worker_tasks and of the history in bulk');
SELECT ok(EXISTS (SELECT FROM worker_tasks t WHERE t.id = (SELECT id FROM th WHERE name = 'cancelled_10m') AND t.status = 'pending'),
    'Should have put the cancelled task of the history back to pending in worker_tasks');

SELECT is((SELECT status FROM delete_task((SELECT id FROM th WHERE name = 'completed_1h'))), 'completed',
    'Should delete a task of the history and return it as it was');
SELECT ok(NOT EXISTS (SELECT FROM worker_tasks_with_history w WHERE w.id = (SELECT id FROM th WHERE name = 'completed_1h')),
    'Should have deleted it from the history');
SELECT throws_ok(format('SELECT delete_task(%s)', (SELECT id FROM th WHERE name = 'completed_1h')), 'P0002',
    format('task %s does not exist', (SELECT id FROM th WHERE name = 'completed_1h')),
    'Should say a deleted task does not exist');
SELECT is((SELECT sum(tasks) FROM task_history_counts WHERE role = 't_history' AND status = 'completed'), 1::numeric,
    'Should take a deleted task out of the history''s counts');

/****************************************************************************/
-- task_chain and follow-ups across the move

SELECT pg_temp.finish('parent', 'completed', '1 hour', role := 't_history_spec');
INSERT INTO th SELECT 'child', tests.make_task(role := 't_history_child');
UPDATE worker_tasks SET parent_id = (SELECT id FROM th WHERE name = 'parent') WHERE id = (SELECT id FROM th WHERE name = 'child');
SELECT is(move_tasks_to_history(), 1::bigint, 'Should move the completed parent');
SELECT is((SELECT parent_id FROM worker_tasks WHERE id = (SELECT id FROM th WHERE name = 'child')),
    (SELECT id FROM th WHERE name = 'parent'), 'Should keep a follow-up''s parent_id when its parent moves');
SELECT results_eq(format('SELECT id, depth, in_h FROM (SELECT c.id, c.depth, w.in_history AS in_h FROM task_chain(%s) c JOIN worker_tasks_with_history w USING (id)) x ORDER BY depth',
                         (SELECT id FROM th WHERE name = 'child')),
    format('VALUES (%s::bigint, -1, true), (%s::bigint, 0, false)', (SELECT id FROM th WHERE name = 'parent'), (SELECT id FROM th WHERE name = 'child')),
    'Should walk a chain up from worker_tasks into the history');
SELECT is((SELECT count(*) FROM task_chain((SELECT id FROM th WHERE name = 'parent'))), 2::bigint,
    'Should walk a chain down from the history into worker_tasks');
SELECT results_eq(format('SELECT task_id, status, watched FROM register_task_waits(ARRAY[%s], descendants := true)',
                         (SELECT id FROM th WHERE name = 'parent')),
    format('VALUES (%s::bigint, ''completed'', false), (%s::bigint, ''pending'', true)',
           (SELECT id FROM th WHERE name = 'parent'), (SELECT id FROM th WHERE name = 'child')),
    'Should report a waited-for task of the history as finished, and watch its follow-ups in worker_tasks');

/****************************************************************************/
-- replays: the earlier runs of a spec

SELECT pg_temp.finish('spec_old', 'completed', '3 hours', '{"sku": 7}', 't_history_spec');
SELECT is(move_tasks_to_history(), 1::bigint, 'Should move the old run of the spec');
INSERT INTO th SELECT 'spec_new', tests.make_task(role := 't_history_spec', payload := '{"sku": 7}');
SELECT results_eq($$SELECT id, in_history FROM task_spec_runs('t_history_spec', NULL, '{"sku": 7}')$$,
    $$SELECT id, name = 'spec_old' FROM th WHERE name IN ('spec_new', 'spec_old') ORDER BY name = 'spec_old'$$,
    'Should find every run of a spec, newest first, in worker_tasks and in the history');
SELECT is_empty($$SELECT * FROM task_spec_runs('t_history_spec', NULL, '{"sku": 7.0}')$$,
    'Should tell specs apart as task_spec_hash does (7 and 7.0 differ)');
SELECT is((SELECT count(*) FROM task_spec_runs('t_history_spec', NULL, '{"sku": 7}', max_runs := 1)), 1::bigint,
    'Should return at most max_runs runs');
SELECT throws_ok($$SELECT * FROM task_spec_runs('t_history', NULL, '{}', max_runs := 0)$$, '22023',
    'max_runs must be from 1 to 10000, not 0', 'Should refuse max_runs of 0');
SET LOCAL enable_seqscan = off;
SELECT ok(pg_temp.plan_of($$SELECT * FROM worker_task_history WHERE spec_hash = 'sha256:00'$$) LIKE '%Index%spec_hash%',
    'Should look a spec up in the history by its index');
RESET enable_seqscan;

/****************************************************************************/
-- retention: whole days of a status are dropped; shorter keeps delete rows

SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'completed_tasks'), 1::bigint,
    'Should count the completed task of 9 days ago in the history as prunable');
SELECT results_eq($$SELECT policy, pruned FROM apply_retention() WHERE policy = 'completed_tasks'$$,
    $$VALUES ('completed_tasks', 1::bigint)$$, 'Should prune it through the completed_tasks policy');
SELECT hasnt_table('public', 'worker_task_history_' || to_char((now() - interval '9 days') AT TIME ZONE 'UTC', 'YYYYMMDD') || '_completed',
    'Should have dropped the day''s completed leaf whole');
SELECT is((SELECT total FROM task_metric_totals WHERE role = 't_history' AND counter = 'pruned_completed'), 1::bigint,
    'Should count the dropped completed task as pruned in the metrics');
SELECT is(prune_tasks(interval '2 hours'), 1, 'Should prune by rows a task of the history younger than a day');
SELECT ok(NOT EXISTS (SELECT FROM worker_task_history h WHERE h.id = (SELECT id FROM th WHERE name = 'spec_old')),
    'Should have deleted the task finished 3 hours ago, and kept the one of an hour ago');

SELECT * FROM finish();
ROLLBACK;
