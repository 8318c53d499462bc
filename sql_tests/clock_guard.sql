-- The clock guard: a worker session cannot move the clock that taskpool's SECURITY DEFINER
-- functions read (issue 11, item 2). Only an operator moves it, with set_taskpool_clock_offset.
BEGIN;
SELECT plan(12);

-- A login granted only taskpool_worker, as the least-privilege deployment makes it.
CREATE ROLE t23_worker_login LOGIN IN ROLE taskpool_worker;
INSERT INTO task_roles (role) VALUES ('t23_later'), ('t23_beat');
INSERT INTO platform_governance (platform, requests_per_minute) VALUES ('t23_rate', 60);
SELECT tests.make_task(role := 't23_later', scheduled_for := now() + interval '1 day') AS later_id \gset
SELECT id AS beat_id, attempt AS beat_attempt
FROM tests.make_claimed_task(worker_id := 't23-w', role := 't23_beat', started := true) \gset
SELECT tests.age_heartbeat(:beat_id, interval '1 minute') AS aged \gset

/****************************************************************************/
-- The worker sets taskpool.clock_offset, as any session can

SET ROLE t23_worker_login;
SELECT is(current_user::text, 't23_worker_login', 'Should run as the worker login');
SELECT results_eq($$SELECT acquire_platform_request('t23_rate') FROM generate_series(1, 5)$$,
    $$VALUES (0::double precision), (0), (0), (0), (0)$$, 'Should let the worker spend the platform''s burst');

SET taskpool.clock_offset = '2 days';
SELECT is(taskpool_now(), now(), 'Should ignore a session''s taskpool.clock_offset setting');
SELECT is((SELECT count(*) FROM claim_task('t23_later', 't23-thief')), 0::bigint,
    'Should not let a worker''s clock setting claim a task scheduled for tomorrow');
-- the bucket refills by the clock (the milliseconds this test takes count), never by two days
SELECT cmp_ok(acquire_platform_request('t23_rate'), '>', 0.9::double precision,
    'Should not let a worker''s clock setting refill the platform''s rate limit');
SET taskpool.clock_offset = '100 years';
SELECT is(heartbeat_task(:beat_id, 't23-w', :beat_attempt, tests.claim_token(:beat_id, :beat_attempt)), 'continue', 'Should still take the worker''s heartbeat');
SET taskpool.clock_offset = '-10 days';
SELECT is((complete_task(:beat_id, 't23-w', :beat_attempt, tests.claim_token(:beat_id, :beat_attempt))).status, 'completed', 'Should still take the worker''s completion');

SELECT throws_ok($$SELECT set_taskpool_clock_offset('2 days')$$, '42501',
    'permission denied for function set_taskpool_clock_offset',
    'Should not let a worker call the operator''s clock function');
SELECT throws_ok($$CREATE OR REPLACE FUNCTION taskpool_now() RETURNS timestamptz LANGUAGE sql AS 'SELECT now() + interval ''2 days'''$$,
    '42501', NULL, 'Should not let a worker redefine the clock');

RESET taskpool.clock_offset;
RESET ROLE;

/****************************************************************************/
-- What the worker's calls stamped, read as the owner

SELECT is((SELECT status FROM worker_tasks WHERE id = :later_id), 'pending', 'Should leave tomorrow''s task pending');
SELECT is((SELECT last_heartbeat_at FROM worker_tasks WHERE id = :beat_id), now(),
    'Should stamp the heartbeat in database time, not a century ahead');
SELECT is((SELECT completed_at FROM worker_tasks WHERE id = :beat_id), now(),
    'Should stamp the completion in database time, not ten days back (where pruning would take it)');

SELECT * FROM finish();
ROLLBACK;
