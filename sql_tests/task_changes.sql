-- task_changes: the stream of task changes on the channel taskpool_task_changes. While a
-- follower's lease runs, every statement that changes tasks publishes at its commit one JSON
-- message per (event, role, from, to), ids chunked by 300; with no lease running, nothing.
-- Two dblink sessions: one acts (each statement committed), one listens; what the acting session
-- committed is removed at the end.
BEGIN;
SELECT plan(16);

CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('t68_actor', tests.session_conninfo('t68_actor'));
SELECT dblink_connect('t68_listener', tests.session_conninfo('t68_listener'));
SELECT dblink_exec('t68_listener', 'LISTEN taskpool_task_changes');

-- The messages heard, once `expected` came (5 s at most), each parsed, in the order sent.
CREATE FUNCTION pg_temp.t68_heard(expected integer)
RETURNS jsonb[]
LANGUAGE plpgsql
AS $$
DECLARE
    v_heard jsonb[] := '{}';
    v_until timestamptz := clock_timestamp() + interval '5 seconds';
BEGIN
    LOOP
        v_heard := v_heard || ARRAY(SELECT n.extra::jsonb FROM dblink_get_notify('t68_listener') AS n
                                    WHERE n.notify_name = 'taskpool_task_changes');
        EXIT WHEN cardinality(v_heard) >= expected OR clock_timestamp() > v_until;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN v_heard;
END;
$$;

CREATE FUNCTION pg_temp.t68_act(statement text)
RETURNS text
LANGUAGE sql
AS $$
    SELECT a.value FROM dblink('t68_actor', statement) AS a(value text);
$$;

/****************************************************************************/
-- Structure and bad input

SELECT has_table('public', 'task_change_followers', 'Should have task_change_followers');
SELECT has_function('public', 'follow_task_changes', ARRAY['text', 'interval'], 'Should have follow_task_changes(text, interval)');
SELECT has_function('public', 'unfollow_task_changes', ARRAY['text'], 'Should have unfollow_task_changes(text)');
SELECT throws_ok($$SELECT follow_task_changes('', interval '1 minute')$$, '22023',
    'follower must be a name of 1 to 200 characters, not ''''', 'Should refuse a blank follower name');
SELECT throws_ok($$SELECT follow_task_changes('t68', interval '2 days')$$, '22023',
    'lease must be from 1 second to 1 day, not 2 days', 'Should refuse a lease over a day');

/****************************************************************************/
-- No follower: nothing is sent

SELECT pg_temp.t68_act($$INSERT INTO task_roles (role, description) VALUES ('t68_role', 'pgTAP 68') RETURNING 'done'$$);
SELECT pg_temp.t68_act($$SELECT id::text FROM enqueue_task('t68_role')$$) AS unheard \gset

/****************************************************************************/
-- A follower: every change, one message per statement and group

SELECT ok(pg_temp.t68_act($$SELECT follow_task_changes('t68_follower', interval '5 minutes')::text$$)::timestamptz > now(),
    'Should start a lease that runs out in the future');
SELECT pg_temp.t68_act($$SELECT string_agg(id::text, ' ' ORDER BY id) FROM enqueue_tasks(
                          (SELECT jsonb_agg(jsonb_build_object('role', 't68_role')) FROM generate_series(1, 700)))$$) AS batch \gset
SELECT is(
    ARRAY(SELECT jsonb_build_array(m ->> 'event', m ->> 'role', m -> 'from', m ->> 'to', jsonb_array_length(m -> 'ids'))
          FROM unnest(pg_temp.t68_heard(3)) AS m),
    ARRAY['["enqueued", "t68_role", null, "pending", 300]', '["enqueued", "t68_role", null, "pending", 300]',
          '["enqueued", "t68_role", null, "pending", 100]']::jsonb[],
    'Should publish a batch of 700 enqueued tasks as 3 messages of at most 300 ids, and nothing for the enqueue before the lease');

SELECT pg_temp.t68_act($$SELECT string_agg(id::text, ',' ORDER BY id) FROM claim_and_start_tasks('t68_role', 't68_w', 2)$$) AS claimed \gset
SELECT is(pg_temp.t68_heard(1),
    ARRAY[format('{"event": "status", "role": "t68_role", "from": "pending", "to": "running", "ids": [%s]}', :'claimed')::jsonb],
    'Should publish a claim of two tasks as one message naming both');

SELECT split_part(:'claimed', ',', 1)::bigint AS first, split_part(:'claimed', ',', 2)::bigint AS second \gset
SELECT pg_temp.t68_act(format($$SELECT status FROM complete_task(%s, 't68_w', 1, tests.claim_token(%1$s, 1), '{"n": 1}')$$, :first));
SELECT pg_temp.t68_act(format($$SELECT status FROM cancel_task(%s)$$, :second));
SELECT pg_temp.t68_act(format($$SELECT answer FROM heartbeat_tasks('t68_w', ARRAY[%s], ARRAY[1], tests.claim_tokens(ARRAY[%1$s], ARRAY[1]))$$, :second));
SELECT pg_temp.t68_act(format($$SELECT status FROM fail_task(%s, 't68_w', 1, tests.claim_token(%1$s, 1), 'stopped')$$, :second));
SELECT is(pg_temp.t68_heard(3), ARRAY[
    format('{"event": "status", "role": "t68_role", "from": "running", "to": "completed", "ids": [%s]}', :first)::jsonb,
    format('{"event": "cancel_requested", "role": "t68_role", "from": "running", "to": "running", "ids": [%s]}', :second)::jsonb,
    format('{"event": "status", "role": "t68_role", "from": "running", "to": "cancelled", "ids": [%s]}', :second)::jsonb],
    'Should publish a completion, a cancel request and the cancelled end, and nothing for a heartbeat');

SELECT is(pg_temp.t68_act($$SELECT cancel_tasks(role := 't68_role')::text$$), '699',
    'Should cancel the rest in bulk (the 698 of the batch and the one enqueued before the lease)');
SELECT is(ARRAY(SELECT (m ->> 'to') || ' ' || jsonb_array_length(m -> 'ids') FROM unnest(pg_temp.t68_heard(3)) AS m),
    ARRAY['cancelled 300', 'cancelled 300', 'cancelled 99'], 'Should publish a bulk cancel of 699 tasks as 3 messages');

SELECT pg_temp.t68_act(format($$SELECT status FROM retry_task(%s)$$, :second));
SELECT pg_temp.t68_act(format($$SELECT status FROM mark_task_completed(%s)$$, :second));
SELECT pg_temp.t68_act(format($$SELECT status FROM delete_task(%s)$$, :second));
SELECT is(pg_temp.t68_heard(3), ARRAY[
    format('{"event": "status", "role": "t68_role", "from": "cancelled", "to": "pending", "ids": [%s]}', :second)::jsonb,
    format('{"event": "status", "role": "t68_role", "from": "pending", "to": "completed", "ids": [%s]}', :second)::jsonb,
    format('{"event": "deleted", "role": "t68_role", "from": "completed", "to": null, "ids": [%s]}', :second)::jsonb],
    'Should publish an operator''s retry, completion and deletion');

SELECT pg_temp.t68_act($$UPDATE worker_tasks SET status = 'pending', retry_count = 0 WHERE role = 't68_role' AND status = 'cancelled' RETURNING 'x'$$);
SELECT is(ARRAY(SELECT (m ->> 'from') || ' ' || (m ->> 'to') || ' ' || jsonb_array_length(m -> 'ids') FROM unnest(pg_temp.t68_heard(3)) AS m),
    ARRAY['cancelled pending 300', 'cancelled pending 300', 'cancelled pending 99'], 'Should publish a direct UPDATE too');

/****************************************************************************/
-- The lease ended: nothing more

SELECT is(pg_temp.t68_act($$SELECT unfollow_task_changes('t68_follower')::text$$), 'true', 'Should end the lease');
SELECT is(pg_temp.t68_act($$SELECT unfollow_task_changes('t68_follower')::text$$), 'false', 'Should say there was no lease left to end');
SELECT pg_temp.t68_act($$SELECT id::text FROM enqueue_task('t68_role')$$);
SELECT pg_temp.t68_act($$SELECT pg_notify('taskpool_task_changes', '{"event": "marker"}')::text$$);
SELECT is(pg_temp.t68_heard(1), ARRAY['{"event": "marker"}'::jsonb], 'Should publish nothing once no lease runs');

SELECT pg_temp.t68_act($$WITH a AS (DELETE FROM worker_task_attempts WHERE task_id IN (SELECT id FROM worker_tasks WHERE role = 't68_role'))
                         SELECT 'done'$$);
SELECT pg_temp.t68_act($$WITH t AS (DELETE FROM worker_tasks WHERE role = 't68_role') SELECT 'done'$$);
SELECT pg_temp.t68_act($$WITH m AS (DELETE FROM task_metric_totals WHERE role = 't68_role') SELECT 'done'$$);
SELECT pg_temp.t68_act($$WITH r AS (DELETE FROM task_roles WHERE role = 't68_role') SELECT 'done'$$);
SELECT dblink_disconnect('t68_actor');
SELECT dblink_disconnect('t68_listener');

SELECT * FROM finish();
ROLLBACK;
