-- concurrency_limits: caps on how many tasks run at once per key, fleet-wide (issue 29, item 2).
-- The limits and their bad input, the claim's rules (a batch stops at a cap, a capped key is not
-- walked, other keys go on), the running counts through every way out of claimed/running, the
-- repair of a drifted count, and v_waiting_tasks. Races between claimers are tested with real
-- workers in tests/test_concurrency_limits.py.
BEGIN;
SELECT plan(60);

INSERT INTO task_roles (role) VALUES ('ccl_plat'), ('ccl_role'), ('ccl_key'), ('ccl_proxy'), ('ccl_default'),
                                     ('ccl_head'), ('ccl_tr'), ('ccl_free');

CREATE FUNCTION pg_temp.running(kind text, key text) RETURNS integer LANGUAGE sql AS $$
    SELECT coalesce((SELECT v.running FROM v_concurrency_limits v WHERE v.kind = $1 AND v.key = $2), 0)
$$;
CREATE FUNCTION pg_temp.enqueue(role text, n integer, spec jsonb DEFAULT '{}') RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM enqueue_tasks((SELECT jsonb_agg(jsonb_build_object('role', $1) || $3) FROM generate_series(1, $2)))
$$;

/****************************************************************************/
-- The limits

SELECT has_table('concurrency_limits', 'Should have table concurrency_limits');
SELECT has_table('concurrency_slots', 'Should have table concurrency_slots (the running counts)');
SELECT has_view('v_concurrency_limits', 'Should have view v_concurrency_limits');
SELECT results_eq($$SELECT kind, key, max_running FROM concurrency_limits$$,
    $$VALUES ('store', '*', 1)$$,
    'Should ship one limit: every store runs one task at a time');

SELECT lives_ok($$SELECT set_concurrency_limit('platform', 'ccl_shop', 3)$$, 'Should set a platform''s limit');
SELECT results_eq($$SELECT max_running, running, limit_source FROM v_concurrency_limits WHERE kind = 'platform' AND key = 'ccl_shop'$$,
    $$VALUES (3, 0, 'own')$$, 'Should show the limit with nothing running');
SELECT is((SELECT max_running FROM set_concurrency_limit('platform', 'ccl_shop', 4)), 4, 'Should change a limit set before');
SELECT lives_ok($$SELECT set_concurrency_limit('platform', 'ccl_shop', 3)$$, 'Should set it back');

-- bad input: a clear error, nothing changed
CREATE TEMP TABLE limits_before AS SELECT * FROM concurrency_limits;
SELECT throws_ok($$SELECT set_concurrency_limit('platform', 'ccl_shop', 0)$$, '22023',
    'max_running must be 1 or more, not 0', 'Should refuse a limit below 1');
SELECT throws_ok($$SELECT set_concurrency_limit('platform', 'ccl_shop', NULL)$$, '22023',
    'max_running must be 1 or more, not NULL', 'Should refuse a NULL limit');
SELECT throws_ok($$SELECT set_concurrency_limit('tenant', 'a', 2)$$, '22023',
    'unknown concurrency kind ''tenant''', 'Should refuse an unknown kind');
SELECT throws_ok($$SELECT set_concurrency_limit(NULL, 'a', 2)$$, '22023', 'kind is required', 'Should refuse no kind');
SELECT throws_ok($$SELECT set_concurrency_limit('key', '', 2)$$, '22023',
    'key must not be empty (''*'' for every key of the kind)', 'Should refuse an empty key');
SELECT throws_ok($$SELECT set_concurrency_limit('key', '  ', 2)$$, '22023',
    'key must not be empty (''*'' for every key of the kind)', 'Should refuse a blank key');
SELECT throws_ok($$SELECT set_concurrency_limit('key', NULL, 2)$$, '22023',
    'key is required (''*'' for every key of the kind)', 'Should refuse a NULL key');
SELECT throws_ok($$SELECT set_concurrency_limit('key', repeat('k', 201), 2)$$, '22023',
    'key has 201 characters; at most 200 are allowed', 'Should refuse a key too long');
SELECT throws_ok($$SELECT set_concurrency_limit('role', 'ccl_nosuch', 2)$$, '22023',
    'unknown role ''ccl_nosuch''', 'Should refuse a role that does not exist');
SELECT throws_ok($$SELECT set_concurrency_limit('store', '*', 2)$$, '22023',
    'a store runs one task at a time: max_running must be 1, not 2', 'Should keep a store at one task');
SELECT throws_ok($$SELECT clear_concurrency_limit('store', '*')$$, '22023',
    'the stores'' limit (one task at a time) cannot be cleared', 'Should keep the store exclusion');
SELECT throws_ok($$SELECT clear_concurrency_limit('tenant', 'a')$$, '22023',
    'unknown concurrency kind ''tenant''', 'Should refuse to clear an unknown kind');
SELECT set_eq($$SELECT * FROM concurrency_limits$$, $$SELECT * FROM limits_before$$,
    'Should change no limit on bad input');
SELECT throws_like($$SELECT enqueue_task('ccl_key', headers := '{"concurrency_key": "*"}')$$,
    'header "concurrency_key" must have 1 to 200 characters%', 'Should refuse a task naming the key ''*''');
SELECT throws_like($$SELECT enqueue_task('ccl_key', headers := '{"concurrency_key": ""}')$$,
    'header "concurrency_key" must have 1 to 200 characters%', 'Should refuse a task naming an empty key');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'ccl_key'), 0::bigint, 'Should enqueue nothing on a bad key');

/****************************************************************************/
-- The claim

-- A platform capped at 3: a batch of 10 takes 3 of it; the other platform's tasks go on.
SELECT pg_temp.enqueue('ccl_plat', 10, '{"platform": "ccl_shop"}');
SELECT pg_temp.enqueue('ccl_plat', 5, '{"platform": "ccl_other"}');
CREATE TEMP TABLE plat_first AS SELECT platform FROM claim_tasks('ccl_plat', 'ccl-w1', 10);
SELECT results_eq($$SELECT platform, count(*) FROM plat_first GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('ccl_other', 5::bigint), ('ccl_shop', 3::bigint)$$,
    'Should take 3 of a platform capped at 3 in one batch, and every task of the other');
SELECT is((SELECT count(*) FROM claim_tasks('ccl_plat', 'ccl-w2', 10)), 0::bigint,
    'Should take none of a platform at its cap');
SELECT is(pg_temp.running('platform', 'ccl_shop'), 3, 'Should count the platform''s 3 running tasks');
SELECT results_eq(
    $$SELECT waiting_for, concurrency_kind, concurrency_key, concurrency_running, concurrency_limit, count(*)
      FROM v_waiting_tasks WHERE role = 'ccl_plat' AND status = 'pending' GROUP BY 1, 2, 3, 4, 5$$,
    $$VALUES ('concurrency', 'platform', 'ccl_shop', 3, 3, 7::bigint)$$,
    'Should say the waiting tasks wait on the platform''s cap, 3 of 3 running');

-- A role capped at 2.
SELECT set_concurrency_limit('role', 'ccl_role', 2);
SELECT pg_temp.enqueue('ccl_role', 5);
SELECT is((SELECT count(*) FROM claim_tasks('ccl_role', 'ccl-w3', 10)), 2::bigint, 'Should take 2 of a role capped at 2');
SELECT is((SELECT count(*) FROM claim_tasks('ccl_role', 'ccl-w3', 10)), 0::bigint, 'Should take none of a role at its cap');
SELECT is((SELECT count(*) FROM v_waiting_tasks WHERE role = 'ccl_role' AND waiting_for = 'concurrency'
                                                    AND concurrency_kind = 'role'), 3::bigint,
    'Should say the role''s other tasks wait on its cap');

-- A task-named key capped at 2; tasks without a key go on.
SELECT set_concurrency_limit('key', 'ccl_tenant', 2);
SELECT pg_temp.enqueue('ccl_key', 6, '{"headers": {"concurrency_key": "ccl_tenant"}}');
SELECT pg_temp.enqueue('ccl_key', 3);
SELECT results_eq($$SELECT headers ->> 'concurrency_key', count(*) FROM claim_tasks('ccl_key', 'ccl-w4', 10) GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('ccl_tenant', 2::bigint), (NULL, 3::bigint)$$,
    'Should take 2 of a key capped at 2, and every task without a key');

-- A proxy: the key 'proxy:NAME'.
SELECT set_concurrency_limit('proxy', 'ccl_p1', 1);
SELECT pg_temp.enqueue('ccl_proxy', 3, '{"headers": {"concurrency_key": "proxy:ccl_p1"}}');
SELECT pg_temp.enqueue('ccl_proxy', 2, '{"headers": {"concurrency_key": "proxy:ccl_p2"}}');
SELECT results_eq($$SELECT headers ->> 'concurrency_key', count(*) FROM claim_tasks('ccl_proxy', 'ccl-w5', 10) GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('proxy:ccl_p1', 1::bigint), ('proxy:ccl_p2', 2::bigint)$$,
    'Should take 1 of a proxy capped at 1, and the tasks of an uncapped proxy');

-- A kind's default: every key 1 (the key's own limit, ccl_tenant's 2, still wins for it).
SELECT set_concurrency_limit('key', '*', 1);
SELECT pg_temp.enqueue('ccl_default', 3, '{"headers": {"concurrency_key": "ccl_a"}}');
SELECT pg_temp.enqueue('ccl_default', 3, '{"headers": {"concurrency_key": "ccl_b"}}');
SELECT results_eq($$SELECT headers ->> 'concurrency_key', count(*) FROM claim_tasks('ccl_default', 'ccl-w6', 10) GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('ccl_a', 1::bigint), ('ccl_b', 1::bigint)$$,
    'Should take one task of each key under the kind''s default of 1');
SELECT results_eq($$SELECT key, max_running, running, limit_source FROM v_concurrency_limits WHERE kind = 'key' ORDER BY key$$,
    $$VALUES ('*', 1, 2, 'default'), ('ccl_a', 1, 1, 'default'), ('ccl_b', 1, 1, 'default'), ('ccl_tenant', 2, 2, 'own')$$,
    'Should list the default, the keys running under it, and the key with its own limit');
SELECT ok(clear_concurrency_limit('key', '*'), 'Should clear a kind''s default');

-- A capped key at the head of the queue is not walked: the task behind it is claimed.
SELECT set_concurrency_limit('key', 'ccl_full', 1);
SELECT pg_temp.enqueue('ccl_head', 1, '{"headers": {"concurrency_key": "ccl_full"}, "priority": 9}');
SELECT is((SELECT count(*) FROM claim_tasks('ccl_head', 'ccl-w7', 1)), 1::bigint, 'Should take the key''s one task');
SELECT pg_temp.enqueue('ccl_head', 50, '{"headers": {"concurrency_key": "ccl_full"}, "priority": 9}');
SELECT pg_temp.enqueue('ccl_head', 1, '{"payload": {"behind": true}}');
SELECT is((SELECT payload FROM claim_tasks('ccl_head', 'ccl-w7', 1)), '{"behind": true}'::jsonb,
    'Should claim the task behind 50 tasks of a key at its cap, in a claim of one');

-- A limit set while tasks of the key run counts them at once.
SELECT pg_temp.enqueue('ccl_free', 3);
SELECT is((SELECT count(*) FROM claim_tasks('ccl_free', 'ccl-w8', 3)), 3::bigint, 'Should claim an uncapped role''s tasks');
SELECT set_concurrency_limit('role', 'ccl_free', 2);
SELECT is(pg_temp.running('role', 'ccl_free'), 3, 'Should count the tasks that ran before the limit');
SELECT pg_temp.enqueue('ccl_free', 1);
SELECT is((SELECT count(*) FROM claim_tasks('ccl_free', 'ccl-w8', 3)), 0::bigint, 'Should claim none while more than the limit run');

-- Without a limit, single claims alternate between keys at equal priority, as between platforms.
INSERT INTO task_roles (role) VALUES ('ccl_turns');
SELECT pg_temp.enqueue('ccl_turns', 4, '{"headers": {"concurrency_key": "ccl_ka"}}');
SELECT pg_temp.enqueue('ccl_turns', 2, '{"headers": {"concurrency_key": "ccl_kb"}}');
CREATE TEMP TABLE turns_taken (n serial, key text);
INSERT INTO turns_taken (key) SELECT headers ->> 'concurrency_key' FROM claim_task('ccl_turns', 'ccl-w10');
INSERT INTO turns_taken (key) SELECT headers ->> 'concurrency_key' FROM claim_task('ccl_turns', 'ccl-w10');
INSERT INTO turns_taken (key) SELECT headers ->> 'concurrency_key' FROM claim_task('ccl_turns', 'ccl-w10');
INSERT INTO turns_taken (key) SELECT headers ->> 'concurrency_key' FROM claim_task('ccl_turns', 'ccl-w10');
INSERT INTO turns_taken (key) SELECT headers ->> 'concurrency_key' FROM claim_task('ccl_turns', 'ccl-w10');
SELECT is((SELECT array_agg(key ORDER BY n) FROM turns_taken),
    ARRAY['ccl_ka', 'ccl_kb', 'ccl_ka', 'ccl_kb', 'ccl_ka'],
    'Should alternate single claims between two keys of a role, then serve the one left');

/****************************************************************************/
-- The running counts through every way out of claimed/running

SELECT set_concurrency_limit('role', 'ccl_tr', 100);
SELECT pg_temp.enqueue('ccl_tr', 9);
CREATE TEMP TABLE tr AS SELECT row_number() OVER (ORDER BY id) AS n, * FROM claim_tasks('ccl_tr', 'ccl-w9', 9);
SELECT is(pg_temp.running('role', 'ccl_tr'), 9, 'Should count 9 claimed tasks');
SELECT start_task(id, worker_id, attempt, claim_token) FROM tr WHERE n = 1;
SELECT is(pg_temp.running('role', 'ccl_tr'), 9, 'Should still count a started task');
SELECT complete_task(id, worker_id, attempt, claim_token) FROM tr WHERE n = 1;
SELECT is(pg_temp.running('role', 'ccl_tr'), 8, 'Should free the slot of a completed task');
SELECT fail_task(id, worker_id, attempt, claim_token, 'boom') FROM tr WHERE n = 2;
SELECT fail_task(id, worker_id, attempt, claim_token, 'boom', retryable := false) FROM tr WHERE n = 3;
SELECT is(pg_temp.running('role', 'ccl_tr'), 6, 'Should free the slots of a retried and a failed task');
SELECT release_task(id, worker_id, attempt, claim_token) FROM tr WHERE n = 4;
SELECT snooze_task(id, worker_id, attempt, claim_token, now() + interval '1 hour') FROM tr WHERE n = 5;
SELECT is(pg_temp.running('role', 'ccl_tr'), 4, 'Should free the slots of a released and a snoozed task');
SELECT cancel_task(id) FROM tr WHERE n = 6;
SELECT fail_task(id, worker_id, attempt, claim_token, 'cancelled') FROM tr WHERE n = 6;
SELECT mark_task_completed(id) FROM tr WHERE n = 7;
SELECT delete_task(id) FROM tr WHERE n = 8;
SELECT is(pg_temp.running('role', 'ccl_tr'), 1, 'Should free the slots of a cancelled, an operator-completed and a deleted task');
UPDATE worker_tasks SET last_heartbeat_at = now() - interval '1 day' WHERE id = (SELECT id FROM tr WHERE n = 9);
SELECT ok(recover_stale_tasks(10) >= 1, 'Should recover the stale task');
SELECT is(pg_temp.running('role', 'ccl_tr'), 0, 'Should free the slot of a task stale recovery took back');
SELECT results_eq($$SELECT status, count(*) FROM worker_tasks WHERE role = 'ccl_tr' GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('cancelled', 1::bigint), ('completed', 2::bigint), ('failed', 1::bigint), ('pending', 4::bigint)$$,
    'Should have ended the attempts as the calls said');

/****************************************************************************/
-- Repair

SELECT is(recount_concurrency(), 0, 'Should find every count right');
-- drift: a slot held by a finished task, and a running task without its slot
UPDATE concurrency_slots SET task_id = (SELECT id FROM tr WHERE n = 1)
WHERE (kind, key, slot) = (SELECT kind, key, min(slot) FROM concurrency_slots
                           WHERE kind = 'platform' AND key = 'ccl_shop' AND task_id IS NULL GROUP BY 1, 2);
DELETE FROM concurrency_slots WHERE task_id = (SELECT min(id) FROM worker_tasks WHERE role = 'ccl_role' AND status = 'claimed');
SELECT is(pg_temp.running('role', 'ccl_role'), 1, 'Should have drifted: a running task of the role without its slot');
SELECT ok(recount_concurrency() >= 1, 'Should repair the drifted counts');
SELECT is(pg_temp.running('role', 'ccl_role'), 2, 'Should count the role''s running task again');
SELECT is(pg_temp.running('platform', 'ccl_shop'), 3, 'Should not count the finished task''s slot');
SELECT is(recount_concurrency(), 0, 'Should find every count right after the repair');

/****************************************************************************/
-- Clearing a limit

SELECT ok(clear_concurrency_limit('platform', 'ccl_shop'), 'Should clear the platform''s limit');
SELECT is(clear_concurrency_limit('platform', 'ccl_shop'), false, 'Should answer false for a limit not set');
SELECT is((SELECT count(*) FROM claim_tasks('ccl_plat', 'ccl-w2', 10)), 7::bigint,
    'Should take every task of the platform once its limit is cleared');

SELECT * FROM finish();
ROLLBACK;
