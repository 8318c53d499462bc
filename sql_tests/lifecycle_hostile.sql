-- lifecycle_hostile: lifecycle calls given what a hostile worker or an unlucky operator can
-- give them. Each is refused with a clear error that changes nothing, or is made harmless, and
-- never takes down more than the one task it concerns.
BEGIN;
SELECT plan(30);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t24_outcome', 'pgTAP lifecycle_hostile: fail_task and snooze_task times', 3),
    ('t24_retry',   'pgTAP lifecycle_hostile: retry_task', 3),
    ('t24_counter', 'pgTAP lifecycle_hostile: the attempt counter', 3);

/****************************************************************************/
-- fail_task and snooze_task refuse a time the task could never reach (item 7)

SELECT id AS running_id, attempt AS running_attempt
FROM tests.make_claimed_task(worker_id := 'w1', role := 't24_outcome', started := true) \gset

SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w1', %s, tests.claim_token(%1$s, %2$s), 'boom', retry_at := 'infinity')$$, :running_id, :running_attempt),
    '22023', 'retry_at must be a finite time before year 10000, not infinity',
    'Should refuse fail_task with retry_at infinity');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w1', %s, tests.claim_token(%1$s, %2$s), 'boom', retry_at := '-infinity')$$, :running_id, :running_attempt),
    '22023', 'retry_at must be a finite time before year 10000, not -infinity',
    'Should refuse fail_task with retry_at -infinity');
SELECT throws_ok(
    format($$SELECT fail_task(%s, 'w1', %s, tests.claim_token(%1$s, %2$s), 'boom', retry_at := '10000-01-01 00:00:00+00')$$, :running_id, :running_attempt),
    '22023', NULL,
    'Should refuse fail_task with retry_at past year 9999');
SELECT throws_ok(
    format($$SELECT snooze_task(%s, 'w1', %s, tests.claim_token(%1$s, %2$s), 'infinity')$$, :running_id, :running_attempt),
    '22023', 'until must be a finite time before year 10000, not infinity',
    'Should refuse snooze_task until infinity');
SELECT throws_ok(
    format($$SELECT snooze_task(%s, 'w1', %s, tests.claim_token(%1$s, %2$s), '-infinity')$$, :running_id, :running_attempt),
    '22023', 'until must be a finite time before year 10000, not -infinity',
    'Should refuse snooze_task until -infinity');
SELECT throws_ok(
    format($$SELECT snooze_task(%s, 'w1', %s, tests.claim_token(%1$s, %2$s), '20000-06-01 00:00:00+00')$$, :running_id, :running_attempt),
    '22023', NULL,
    'Should refuse snooze_task until past year 9999');
SELECT results_eq(
    format('SELECT status, worker_id, attempt, retry_count, error_message FROM worker_tasks WHERE id = %s', :running_id),
    format($$VALUES ('running'::text, 'w1'::text, %s, 0, NULL::text)$$, :running_attempt),
    'Should leave the refused task running, owned and unchanged');
SELECT is(
    (SELECT scheduled_for FROM fail_task(:running_id, 'w1', :running_attempt, tests.claim_token(:running_id, :running_attempt), 'boom',
                                         retry_at := '9999-06-01 00:00:00+00')),
    '9999-06-01 00:00:00+00'::timestamptz,
    'Should still accept a retry_at far off but within year 9999');

/****************************************************************************/
-- retry_task refuses a per-store task whose store is gone (item 14)

SELECT tests.make_store(name := 't24 doomed') AS doomed_store \gset
SELECT tests.make_task(role := 'product_refresh', dispensary_id := :doomed_store) AS orphan_id \gset
DELETE FROM dispensaries WHERE id = :doomed_store;

SELECT throws_ok(format('SELECT retry_task(%s)', :orphan_id), '22023',
    format('task %s cannot be retried: role product_refresh needs a dispensary_id and the task has none', :orphan_id),
    'Should refuse to retry a per-store task whose store was deleted');
SELECT results_eq(
    format('SELECT status, dispensary_id FROM worker_tasks WHERE id = %s', :orphan_id),
    $$VALUES ('cancelled'::text, NULL::integer)$$,
    'Should leave the storeless task cancelled');
SELECT is_empty($$SELECT * FROM claim_task('product_refresh', 'w24')$$,
    'Should leave no storeless per-store task to claim');

-- A task of a role that needs no store can still be retried.
SELECT tests.make_task(role := 't24_retry') AS storeless_ok_id \gset
SELECT cancel_task(:storeless_ok_id);
SELECT is((SELECT status FROM retry_task(:storeless_ok_id)), 'pending',
    'Should still retry a cancelled task of a role that needs no store');

/****************************************************************************/
-- retry_task losing a race for a dedupe key says which task holds it (item 17)

-- A real race between two sessions (dblink), on committed tasks of a shipped role: session
-- `holder` retries one task and keeps its transaction open; session `loser` retries another task
-- with the same dedupe key, finds no active holder yet, and waits on the key's unique index
-- entry until `holder` commits.
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('t24_holder', tests.session_conninfo());
SELECT dblink_connect('t24_loser', tests.session_conninfo());

SELECT r.id AS race_holder_id
FROM dblink('t24_holder', $$SELECT (cancel_task(t.id)).id FROM enqueue_task('analytics_refresh', dedupe_key := 't24-race') t$$)
     AS r(id bigint) \gset
SELECT r.id AS race_loser_id
FROM dblink('t24_holder', $$SELECT (cancel_task(t.id)).id FROM enqueue_task('analytics_refresh', dedupe_key := 't24-race') t$$)
     AS r(id bigint) \gset
SELECT set_config('t24.loser_pid', r.pid::text, true) FROM dblink('t24_loser', 'SELECT pg_backend_pid()') AS r(pid integer);
SELECT dblink_exec('t24_loser', $q$
    CREATE FUNCTION pg_temp.t24_try_retry(task_id bigint) RETURNS text[] LANGUAGE plpgsql AS $f$
    BEGIN
        RETURN ARRAY['00000', (retry_task(task_id)).status];
    EXCEPTION WHEN OTHERS THEN
        RETURN ARRAY[SQLSTATE, SQLERRM];
    END;
    $f$$q$);

SELECT dblink_exec('t24_holder', 'BEGIN');
SELECT r.status FROM dblink('t24_holder', format('SELECT status FROM retry_task(%s)', :race_holder_id)) AS r(status text);
SELECT dblink_send_query('t24_loser', format('SELECT pg_temp.t24_try_retry(%s)', :race_loser_id));
DO $$
BEGIN
    FOR i IN 1..400 LOOP
        EXIT WHEN cardinality(pg_blocking_pids(current_setting('t24.loser_pid')::integer)) > 0;
        PERFORM pg_sleep(0.025);
    END LOOP;
END;
$$;
SELECT ok(cardinality(pg_blocking_pids(current_setting('t24.loser_pid')::integer)) > 0,
    'Should have the second retry wait on the first one''s dedupe key');
SELECT dblink_exec('t24_holder', 'COMMIT');

SELECT is(
    (SELECT r.outcome FROM dblink_get_result('t24_loser') AS r(outcome text[])),
    ARRAY['23505', format('task %s cannot be retried: task %s with dedupe key ''t24-race'' is active',
                          :race_loser_id, :race_holder_id)],
    'Should name the task that took the dedupe key while the retry ran');
SELECT is_empty('SELECT * FROM dblink_get_result(''t24_loser'') AS r(outcome text[])', 'Should end the racing call');
SELECT results_eq(
    format('SELECT id, status FROM dblink(''t24_holder'', ''SELECT id, status FROM worker_tasks WHERE id IN (%s, %s) ORDER BY id'') AS r(id bigint, status text)',
           :race_holder_id, :race_loser_id),
    format($$VALUES (%s::bigint, 'pending'::text), (%s, 'cancelled')$$, :race_holder_id, :race_loser_id),
    'Should leave the winner pending and the loser cancelled');

SELECT dblink_exec('t24_holder', format('DELETE FROM worker_tasks WHERE id IN (%s, %s)', :race_holder_id, :race_loser_id));
SELECT dblink_disconnect('t24_holder');
SELECT dblink_disconnect('t24_loser');

/****************************************************************************/
-- prune_tasks with an age older than any timestamp prunes nothing (item 17)

SELECT tests.make_task(role := 't24_retry') AS finished_id \gset
SELECT cancel_task(:finished_id);
SELECT tests.age_completion(:finished_id, '1000 years');

SELECT is(prune_tasks('1000000 years'), 0, 'Should prune nothing older than a million years');
SELECT is(prune_tasks('7000 years'), 0, 'Should prune nothing older than the earliest timestamp');
SELECT is((SELECT count(*) FROM worker_tasks WHERE id = :finished_id), 1::bigint,
    'Should keep the finished task');
SELECT throws_ok($$SELECT prune_tasks('-1000000 years')$$, '22023',
    'older_than must be a non-negative interval, not -1000000 years',
    'Should still refuse a negative age');

/****************************************************************************/
-- A task whose attempt counter is spent fails alone; the rest of its role is claimed (item 18)

-- Reaching the last attempt takes 2^31 - 1 claims; the test writes the counter directly.
SELECT tests.make_task(role := 't24_counter', priority := 100) AS spent_id \gset
SELECT tests.make_task(role := 't24_counter', priority := 0) AS healthy_id \gset
UPDATE worker_tasks SET attempt = 2147483647 WHERE id = :spent_id;

SELECT results_eq(
    $$SELECT id FROM claim_task('t24_counter', 'w24')$$,
    ARRAY[:healthy_id::bigint],
    'Should claim the next task when the first in line has spent its attempt counter');
SELECT results_eq(
    format('SELECT status, attempt, worker_id, error_message FROM worker_tasks WHERE id = %s', :spent_id),
    $$VALUES ('failed'::text, 2147483647, NULL::text,
              'attempt 2147483647 is the last the attempt counter holds: the task cannot be claimed again'::text)$$,
    'Should fail the task whose attempt counter is spent, saying why');

SELECT tests.make_task(role := 't24_counter', priority := 100) AS spent_2_id \gset
SELECT tests.make_task(role := 't24_counter', priority := 0) AS healthy_2_id \gset
SELECT tests.make_task(role := 't24_counter', priority := 0) AS healthy_3_id \gset
UPDATE worker_tasks SET attempt = 2147483647 WHERE id = :spent_2_id;
SELECT results_eq(
    $$SELECT id FROM claim_and_start_tasks('t24_counter', 'w24b', 5) ORDER BY id$$,
    ARRAY[:healthy_2_id::bigint, :healthy_3_id::bigint],
    'Should claim and start the rest of a batch around a spent task');
SELECT is((SELECT status FROM worker_tasks WHERE id = :spent_2_id), 'failed',
    'Should fail the spent task met by a batch claim');

-- A task at its last attempt that is handed back is failed, not claimed, by the next claim.
SELECT tests.make_task(role := 't24_counter', priority := 100) AS last_id \gset
UPDATE worker_tasks SET attempt = 2147483646 WHERE id = :last_id;
SELECT results_eq(
    $$SELECT id, attempt FROM claim_task('t24_counter', 'w24c')$$,
    format('VALUES (%s::bigint, 2147483647)', :last_id),
    'Should claim a task up to the last attempt the counter holds');
SELECT tests.age_heartbeat(:last_id, '1 day');
SELECT is(recover_stale_tasks(60), 1, 'Should take back a stale task at its last attempt');
SELECT is_empty($$SELECT * FROM claim_task('t24_counter', 'w24d')$$,
    'Should not claim the recovered task at its last attempt');
SELECT is((SELECT status FROM worker_tasks WHERE id = :last_id), 'failed',
    'Should fail the recovered task at its last attempt');

SELECT throws_ok(format('SELECT retry_task(%s)', :spent_id), '55000',
    format('task %s cannot be retried: it has used attempt 2147483647, the last the attempt counter holds', :spent_id),
    'Should refuse to retry a task whose attempt counter is spent');
SELECT is((SELECT status FROM worker_tasks WHERE id = :spent_id), 'failed',
    'Should leave the spent task failed');

SELECT * FROM finish();
ROLLBACK;
