-- recover_stale_by_role: recover_stale_tasks_of_role(role), what workers call where no tick runs.
-- It recovers the role's stale tasks as recover_stale_tasks does (and counts them), no other
-- role's; at most once per half the role's stale_threshold, however many call (NULL: not its
-- turn), without waiting for a recovery under way; taskpool_worker may call it. An unknown role
-- is refused and nothing changes.
BEGIN;
SELECT plan(22);

-- t57_a: the role recovered (stale after 10 minutes, so a turn every 5); t57_b: another role.
INSERT INTO task_roles (role, description, stale_threshold, max_retries) VALUES
    ('t57_a', 'pgTAP recover_stale_by_role', '10 minutes', 3),
    ('t57_b', 'pgTAP recover_stale_by_role: another role', '10 minutes', 3);

/****************************************************************************/
-- Structure

SELECT function_returns('recover_stale_tasks_of_role', ARRAY['text'], 'integer',
    'recover_stale_tasks_of_role(text) should return a count');
SELECT is_definer('recover_stale_tasks_of_role', ARRAY['text'],
    'Should run recover_stale_tasks_of_role with its owner''s rights (workers cannot touch the tables)');

/****************************************************************************/
-- Bad input

SELECT tests.rejects($$SELECT recover_stale_tasks_of_role('t57_nope')$$, '22023', 'unknown role ''t57_nope''',
    'an unknown role', '{worker_tasks, task_role_recoveries}');
SELECT tests.rejects($$SELECT recover_stale_tasks_of_role(NULL)$$, '22023', 'unknown role NULL',
    'a NULL role', '{worker_tasks, task_role_recoveries}');

/****************************************************************************/
-- The role's stale tasks, and only those

SELECT id AS stale_a FROM tests.make_claimed_task(worker_id := 'w57-dead', role := 't57_a', started := true) \gset
SELECT id AS fresh_a FROM tests.make_claimed_task(worker_id := 'w57-live', role := 't57_a', started := true) \gset
SELECT id AS stale_b FROM tests.make_claimed_task(worker_id := 'w57-dead', role := 't57_b') \gset
SELECT tests.age_heartbeat(:stale_a, interval '11 minutes') AS aged \gset
SELECT tests.age_heartbeat(:fresh_a, interval '9 minutes') AS aged \gset
SELECT tests.age_heartbeat(:stale_b, interval '11 minutes') AS aged \gset
SELECT coalesce((SELECT total FROM task_metric_totals WHERE role = 't57_a' AND counter = 'stale_recovered'), 0)
    AS recovered_before \gset

-- As a worker would call it.
SET LOCAL ROLE taskpool_worker;
SELECT recover_stale_tasks_of_role('t57_a') AS by_worker \gset
RESET ROLE;
SELECT is(:by_worker, 1, 'Should recover the role''s one stale task, called by taskpool_worker');
SELECT results_eq(
    format($$SELECT id, status, retry_count, worker_id FROM worker_tasks WHERE id IN (%s, %s, %s) ORDER BY id$$,
           :stale_a, :fresh_a, :stale_b),
    format($$VALUES (%s::bigint, 'pending'::text, 1, NULL::text), (%s, 'running', 0, 'w57-live'),
                    (%s, 'claimed', 0, 'w57-dead')$$, :stale_a, :fresh_a, :stale_b),
    'Should put the stale task back to pending with a retry spent, and leave a live task and another role''s alone');
SELECT is(
    (SELECT total FROM task_metric_totals WHERE role = 't57_a' AND counter = 'stale_recovered'),
    :recovered_before + 1::bigint,
    'Should count the recovery in task_metric_totals, as recover_stale_tasks does');
SELECT is((SELECT last_run_at FROM task_role_recoveries WHERE role = 't57_a'), now(),
    'Should remember when the role''s tasks were recovered');

/****************************************************************************/
-- The rate limit: once per half the stale_threshold

-- The recovered task, pending again, is kept out of the next fixture's claim.
UPDATE worker_tasks SET scheduled_for = now() + interval '1 day' WHERE id = :stale_a;
SELECT id AS stale_a2 FROM tests.make_claimed_task(worker_id := 'w57-dead', role := 't57_a') \gset
SELECT tests.age_heartbeat(:stale_a2, interval '11 minutes') AS aged \gset
SELECT is(recover_stale_tasks_of_role('t57_a'), NULL, 'Should do nothing when the role''s tasks were just recovered');
SELECT is((SELECT status FROM worker_tasks WHERE id = :stale_a2), 'claimed',
    'Should leave the stale task to the next turn');
UPDATE task_role_recoveries SET last_run_at = now() - interval '4 minutes 59 seconds' WHERE role = 't57_a';
SELECT is(recover_stale_tasks_of_role('t57_a'), NULL, 'Should still do nothing just before half the stale_threshold');
UPDATE task_role_recoveries SET last_run_at = now() - interval '5 minutes' WHERE role = 't57_a';
SELECT is(recover_stale_tasks_of_role('t57_a'), 1, 'Should recover again once half the stale_threshold has passed');
SELECT is((SELECT status FROM worker_tasks WHERE id = :stale_a2), 'pending', 'Should recover the task left to that turn');
SELECT is(recover_stale_tasks_of_role('t57_b'), 1,
    'Should keep each role''s turn apart: another role''s first call recovers');
-- The clock went back (set_taskpool_clock_offset): a turn dated far ahead does not block for ever.
UPDATE task_role_recoveries SET last_run_at = now() + interval '4 minutes' WHERE role = 't57_a';
SELECT is(recover_stale_tasks_of_role('t57_a'), NULL,
    'Should not take a turn dated less than half the stale_threshold ahead (a caller that began before it)');
UPDATE task_role_recoveries SET last_run_at = now() + interval '1 hour' WHERE role = 't57_a';
SELECT is(recover_stale_tasks_of_role('t57_a'), 0, 'Should take a turn when the last one is dated further ahead than that');
SELECT is((SELECT last_run_at FROM task_role_recoveries WHERE role = 't57_a'), now(),
    'Should date that turn now');

/****************************************************************************/
-- A recovery under way: another caller returns at once, without waiting for it (two sessions,
-- dblink, on the shipped role analytics_refresh, whose turn row is committed and removed after)

CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('t57_holder', tests.session_conninfo('t57_holder'));
SELECT dblink_exec('t57_holder',
    $$INSERT INTO task_role_recoveries (role, last_run_at) VALUES ('analytics_refresh', now() - interval '1 day')
      ON CONFLICT (role) DO UPDATE SET last_run_at = excluded.last_run_at$$);
SELECT dblink_exec('t57_holder', 'BEGIN');
SELECT is(r.recovered, 0, 'Should let the first caller take the turn (it holds it until it commits)')
FROM dblink('t57_holder', $$SELECT recover_stale_tasks_of_role('analytics_refresh')$$) AS r(recovered integer);
-- Waiting would end in this error instead of NULL.
SET LOCAL lock_timeout = '2s';
SELECT is(recover_stale_tasks_of_role('analytics_refresh'), NULL,
    'Should return NULL at once to a second caller while the first one''s recovery is under way');
RESET lock_timeout;
SELECT dblink_exec('t57_holder', 'COMMIT');
SELECT is(recover_stale_tasks_of_role('analytics_refresh'), NULL,
    'Should return NULL to a caller after the first one committed its turn');
SELECT dblink_exec('t57_holder', $$DELETE FROM task_role_recoveries WHERE role = 'analytics_refresh'$$);
SELECT dblink_disconnect('t57_holder');

SELECT * FROM finish();
ROLLBACK;
