-- wake_ups_taken_tasks: a cancel (cancel_task, cancel_tasks, a store deleted) or a stale
-- recovery of a claimed or running task notifies the worker that holds it at commit, on that
-- worker's wake channel, with 'abort:<task id>'; nothing is sent for a cancel rolled back, a
-- pending task's cancel, a second cancel of the same task, or the worker's own calls.
-- Notifications are sent at commit and heard by another session: two dblink sessions, one that
-- acts (each statement committed) and one that listens; what the acting session committed is
-- removed at the end.
BEGIN;
SELECT plan(10);

CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('t58_actor', tests.session_conninfo('t58_actor'));
SELECT dblink_connect('t58_listener', tests.session_conninfo('t58_listener'));
SELECT dblink_exec('t58_listener', format('LISTEN %I', worker_wake_channel('t58_w')));

-- What the listener heard on the worker's channel, once `expected` notifications came (5 s at
-- most): 'channel payload' each, in the order sent. Each sending transaction's notifications
-- arrive in the order of the commits, so the first heard after an action that sends nothing is
-- the next action's: nothing came in between.
CREATE FUNCTION pg_temp.t58_heard(expected integer)
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
    v_heard text[] := '{}';
    v_until timestamptz := clock_timestamp() + interval '5 seconds';
BEGIN
    LOOP
        v_heard := v_heard || ARRAY(SELECT n.notify_name || ' ' || n.extra FROM dblink_get_notify('t58_listener') AS n);
        EXIT WHEN cardinality(v_heard) >= expected OR clock_timestamp() > v_until;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN v_heard;
END;
$$;

-- The acting session's statements, each committed; its last row's first column.
CREATE FUNCTION pg_temp.t58_act(statement text)
RETURNS text
LANGUAGE sql
AS $$
    SELECT a.value FROM dblink('t58_actor', statement) AS a(value text);
$$;

-- Four running tasks of worker t58_w (a, b, c, d) and one pending (p).
SELECT pg_temp.t58_act($$INSERT INTO task_roles (role, description, stale_threshold, max_retries)
                         VALUES ('t58_role', 'pgTAP wake_ups_taken_tasks', '10 minutes', 3) RETURNING 'done'$$);
SELECT pg_temp.t58_act($$SELECT register_worker('t58_w', ARRAY['t58_role'], 'test-host', 1)::text$$);
SELECT pg_temp.t58_act($$SELECT count(*)::text FROM enqueue_tasks(
                           (SELECT jsonb_agg(jsonb_build_object('role', 't58_role')) FROM generate_series(1, 4)))$$);
SELECT pg_temp.t58_act($$SELECT string_agg(c.id::text, ' ' ORDER BY c.id) FROM claim_and_start_tasks('t58_role', 't58_w', 4) AS c$$)
    AS claimed \gset
SELECT split_part(:'claimed', ' ', 1)::bigint AS a, split_part(:'claimed', ' ', 2)::bigint AS b,
       split_part(:'claimed', ' ', 3)::bigint AS c, split_part(:'claimed', ' ', 4)::bigint AS d \gset
SELECT pg_temp.t58_act($$SELECT id::text FROM enqueue_task('t58_role')$$) AS p \gset
SELECT worker_wake_channel('t58_w') AS channel \gset

/****************************************************************************/
-- Nothing for what takes no task from its worker, then one for cancel_task

SELECT dblink_exec('t58_actor', 'BEGIN');
SELECT pg_temp.t58_act(format('SELECT status FROM cancel_task(%s)', :a));
SELECT dblink_exec('t58_actor', 'ROLLBACK');
SELECT pg_temp.t58_act(format('SELECT status FROM cancel_task(%s)', :p));
SELECT pg_temp.t58_act(format($$SELECT answer FROM heartbeat_tasks('t58_w', ARRAY[%s], ARRAY[1], tests.claim_tokens(ARRAY[%1$s], ARRAY[1]))$$, :d));
SELECT pg_temp.t58_act(format($$SELECT status FROM complete_task(%s, 't58_w', 1, tests.claim_token(%1$s, 1))$$, :d));
SELECT pg_temp.t58_act(format('SELECT status FROM cancel_task(%s)', :a));
SELECT is(pg_temp.t58_heard(1), ARRAY[format('%s abort:%s', :'channel', :a)],
    'Should notify the worker that runs a task of its cancel, on its channel, and of nothing before it (its claims, a cancel rolled back, a pending task''s cancel, its own heartbeat and completion)');

/****************************************************************************/
-- cancel_tasks: each task it cancels; a task cancelled already is not notified again

SELECT pg_temp.t58_act(format('SELECT status FROM cancel_task(%s)', :a));
SELECT is(pg_temp.t58_act($$SELECT cancel_tasks(role := 't58_role', status := 'running')::text$$), '2',
    'Should cancel the two running tasks whose cancel was not requested yet');
SELECT is(ARRAY(SELECT h FROM unnest(pg_temp.t58_heard(2)) AS h ORDER BY h),
    ARRAY(SELECT format('%s abort:%s', :'channel', id) FROM unnest(ARRAY[:b, :c]) AS id ORDER BY 1),
    'Should notify the worker of each task cancel_tasks cancelled, and not again of a task cancelled before');

/****************************************************************************/
-- A stale recovery: the worker that held the task

SELECT pg_temp.t58_act(format($$UPDATE worker_tasks SET cancel_requested_at = NULL, last_heartbeat_at = now() - interval '1 hour'
                                WHERE id = %s RETURNING 'done'$$, :c));
SELECT is(pg_temp.t58_act('SELECT recover_stale_tasks()::text'), '1', 'Should recover the silent task');
SELECT is(pg_temp.t58_act(format('SELECT status FROM worker_tasks WHERE id = %s', :c)), 'pending',
    'Should put the recovered task back to pending (its worker_id cleared)');
SELECT is(pg_temp.t58_heard(1), ARRAY[format('%s abort:%s', :'channel', :c)],
    'Should notify the worker that held a recovered task, though the task no longer names it');

/****************************************************************************/
-- A store deleted: the worker running its task

SELECT pg_temp.t58_act($$SELECT tests.make_store(name := 't58 doomed')::text$$) AS store \gset
SELECT pg_temp.t58_act(format($$SELECT id::text FROM enqueue_task('t58_role', dispensary_id := %s, priority := 10)$$, :store))
    AS e \gset
SELECT is(pg_temp.t58_act($$SELECT string_agg(c.id::text, ' ') FROM claim_and_start_tasks('t58_role', 't58_w', 1) AS c$$),
    :'e', 'Should claim the deleted store''s task');
SELECT pg_temp.t58_act(format($$WITH d AS (DELETE FROM dispensaries WHERE id = %s) SELECT 'done'$$, :store));
SELECT is(pg_temp.t58_heard(1), ARRAY[format('%s abort:%s', :'channel', :e)],
    'Should notify the worker running a task of a store deleted');

/****************************************************************************/
-- Nothing else was sent: the next notification heard is a marker sent last

SELECT pg_temp.t58_act(format($$SELECT pg_notify(%L, 'marker')::text$$, :'channel'));
SELECT is(pg_temp.t58_heard(1), ARRAY[format('%s marker', :'channel')], 'Should have sent nothing more');

SELECT is(pg_temp.t58_act($$SELECT count(*)::text FROM task_roles WHERE role = 't58_role'$$), '1',
    'Should have committed what the acting session did (removed below)');

SELECT pg_temp.t58_act($$SELECT deregister_worker('t58_w')::text$$);
SELECT pg_temp.t58_act($$WITH a AS (DELETE FROM worker_task_attempts WHERE task_id IN (SELECT id FROM worker_tasks WHERE role = 't58_role'))
                         SELECT 'done'$$);
SELECT pg_temp.t58_act($$WITH t AS (DELETE FROM worker_tasks WHERE role = 't58_role') SELECT 'done'$$);
SELECT pg_temp.t58_act($$WITH m AS (DELETE FROM task_metric_totals WHERE role = 't58_role') SELECT 'done'$$);
SELECT pg_temp.t58_act($$WITH r AS (DELETE FROM task_roles WHERE role = 't58_role') SELECT 'done'$$);
SELECT dblink_disconnect('t58_actor');
SELECT dblink_disconnect('t58_listener');

SELECT * FROM finish();
ROLLBACK;
