-- retention_keeps_up: apply_retention in rounds (a batch of each policy a round) within a
-- number of rounds and a time budget, what it records of each policy's backlog, the tick's
-- budget, the platform_events policy, and retention's samples in taskpool_metrics().
BEGIN;
SELECT plan(30);

INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t29_retention', 'pgTAP retention keeps up: finished tasks', 3);
-- Only the policies under test run: the others would prune whatever other tests left.
UPDATE retention_policies SET enabled = false;

CREATE FUNCTION pg_temp.old_completed(n integer, age interval DEFAULT '8 days') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    FOR i IN 1 .. n LOOP
        SELECT m.id INTO v_id FROM tests.make_claimed_task(role := 't29_retention', worker_id := 'w29') m;
        PERFORM complete_task(v_id, 'w29', 1, tests.claim_token(v_id, 1));
        PERFORM tests.age_completion(v_id, age);
    END LOOP;
END;
$$;
CREATE FUNCTION pg_temp.left_completed() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM worker_tasks WHERE role = 't29_retention' AND status = 'completed';
$$;

/****************************************************************************/
-- bad input: a clear error, nothing changed

SELECT tests.rejects($$SELECT * FROM apply_retention(0)$$, '22023',
    'max_batches must be positive, not 0', 'no rounds at all', '{retention_policies}');
SELECT tests.rejects($$SELECT * FROM apply_retention(1, 0)$$, '22023',
    'max_seconds must be positive, not 0', 'a time budget of 0 seconds', '{retention_policies}');
SELECT tests.rejects($$SELECT * FROM apply_retention(1, -2.5)$$, '22023',
    'max_seconds must be positive, not -2.5', 'a negative time budget', '{retention_policies}');

/****************************************************************************/
-- rounds: a policy runs batch after batch until done, or until max_batches rounds

UPDATE retention_policies SET enabled = true, batch_size = 2, backlog = NULL, behind_since = NULL
WHERE name = 'completed_tasks';
SELECT pg_temp.old_completed(5);
SELECT results_eq(
    $$SELECT policy, pruned, finished FROM apply_retention(2, count_backlog := true)$$,
    $$VALUES ('completed_tasks', 4::bigint, false)$$,
    'Should prune a batch a round for max_batches rounds, and say the policy is not done');
SELECT is(pg_temp.left_completed(), 1::bigint, 'Should have left the rest for the next run');
SELECT results_eq(
    $$SELECT backlog, behind_since = taskpool_now(), last_pruned FROM retention_policies WHERE name = 'completed_tasks'$$,
    $$VALUES (1::bigint, true, 4::bigint)$$,
    'Should record what was left as the backlog, and since when the policy is behind');
SELECT pg_temp.old_completed(3);
SELECT results_eq(
    $$SELECT policy, pruned, finished FROM apply_retention(2)$$,
    $$VALUES ('completed_tasks', 4::bigint, false)$$,
    'Should again stop after max_batches rounds');
SELECT results_eq(
    $$SELECT backlog, behind_since IS NOT NULL FROM retention_policies WHERE name = 'completed_tasks'$$,
    $$VALUES (NULL::bigint, true)$$,
    'Should leave the backlog unknown (NULL) when not asked to count it, and the policy still behind');
SELECT results_eq(
    $$SELECT policy, pruned, finished FROM apply_retention(100)$$,
    $$VALUES ('completed_tasks', 0::bigint, true)$$,
    'Should end a policy''s rounds with the first short batch');
SELECT results_eq(
    $$SELECT backlog, behind_since FROM retention_policies WHERE name = 'completed_tasks'$$,
    $$VALUES (0::bigint, NULL::timestamptz)$$,
    'Should record a finished policy as no backlog and not behind');
SELECT pg_temp.old_completed(7);
SELECT results_eq(
    $$SELECT pruned, finished FROM apply_retention(100)$$,
    $$VALUES (7::bigint, true)$$,
    'Should prune everything due within max_batches rounds, in batches of batch_size');
SELECT is(pg_temp.left_completed(), 0::bigint, 'Should leave no old completed task');

/****************************************************************************/
-- a round takes a batch of every policy: one far behind cannot starve the others

UPDATE retention_policies SET enabled = true, batch_size = 1 WHERE name IN ('completed_tasks', 'failed_tasks');
SELECT pg_temp.old_completed(3);
SELECT m.id AS failed_id FROM tests.make_claimed_task(role := 't29_retention', worker_id := 'w29') m \gset
SELECT fail_task(:failed_id, 'w29', 1, tests.claim_token(:failed_id, 1), 'permanent', retryable := false);
SELECT tests.age_completion(:failed_id, '40 days');
SELECT results_eq(
    $$SELECT policy, pruned, finished FROM apply_retention(1) ORDER BY policy$$,
    $$VALUES ('completed_tasks', 1::bigint, false), ('failed_tasks', 1::bigint, false)$$,
    'Should take one batch of each policy in a round');
SELECT results_eq(
    $$SELECT policy, pruned, finished FROM apply_retention(10) ORDER BY policy$$,
    $$VALUES ('completed_tasks', 2::bigint, true), ('failed_tasks', 0::bigint, true)$$,
    'Should run only the policies not done yet in later rounds');

/****************************************************************************/
-- the time budget: checked between rounds

UPDATE retention_policies SET enabled = false;
-- A pruner that always comes back with a full batch, slowly: only the budget stops it.
CREATE FUNCTION public.t29_slow_pruner(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF NOT dry_run THEN
        PERFORM pg_sleep(0.05);
    END IF;
    RETURN coalesce(max_rows, 1000000);
END;
$$;
INSERT INTO retention_policies (name, pruner, keep, batch_size, description)
VALUES ('t29_slow', 't29_slow_pruner', '1 day', 10, 'pgTAP: never done');
SELECT results_eq(
    $$SELECT policy, finished FROM apply_retention(1000000, 0.2, true)$$,
    $$VALUES ('t29_slow', false)$$,
    'Should stop once max_seconds have passed, however many rounds are left');
SELECT ok((SELECT last_pruned BETWEEN 10 AND 200 FROM retention_policies WHERE name = 't29_slow'),
    'Should have run a few rounds of 50 ms in 0.2 s, not a million');
SELECT is((SELECT backlog FROM retention_policies WHERE name = 't29_slow'), 1000000::bigint,
    'Should count the backlog with the pruner''s dry run when asked to');
DELETE FROM retention_policies WHERE name = 't29_slow';

/****************************************************************************/
-- the tick keeps up: rounds within its budget, not a batch a minute

UPDATE retention_policies SET enabled = true, batch_size = 1 WHERE name = 'completed_tasks';
SELECT pg_temp.old_completed(4);
SELECT is(tick_schedules() #> '{retention,completed_tasks,pruned}', '4'::jsonb,
    'Should prune more than one batch of a policy behind in one tick');
SELECT results_eq(
    $$SELECT backlog, behind_since FROM retention_policies WHERE name = 'completed_tasks'$$,
    $$VALUES (0::bigint, NULL::timestamptz)$$,
    'Should leave the policy caught up after the tick');

/****************************************************************************/
-- platform_events: circuit events older than the keep, each platform's newest kept

UPDATE retention_policies SET enabled = false;
UPDATE retention_policies SET enabled = true WHERE name = 'platform_events';
INSERT INTO platform_governance (platform, failure_threshold) VALUES ('t29_flappy', 1), ('t29_quiet', 1);
INSERT INTO platform_events (platform, event, at, consecutive_failures) VALUES
    ('t29_flappy', 'opened', taskpool_now() - interval '200 days', 1),
    ('t29_flappy', 'closed', taskpool_now() - interval '199 days', 0),
    ('t29_flappy', 'opened', taskpool_now() - interval '100 days', 1),
    ('t29_flappy', 'closed', taskpool_now() - interval '10 days', 0),
    ('t29_quiet', 'opened', taskpool_now() - interval '300 days', 1);
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'platform_events'), 3::bigint,
    'Should count the old events but each platform''s newest');
SELECT results_eq(
    $$SELECT pruned, finished FROM apply_retention(10) WHERE policy = 'platform_events'$$,
    $$VALUES (3::bigint, true)$$,
    'Should prune the events older than 90 days');
SELECT results_eq(
    $$SELECT platform, event, (taskpool_now() - at) > interval '90 days' FROM platform_events
      WHERE platform LIKE 't29%' ORDER BY platform, at$$,
    $$VALUES ('t29_flappy', 'closed', false), ('t29_quiet', 'opened', true)$$,
    'Should keep the young event, and a platform''s newest however old');

/****************************************************************************/
-- /metrics: what retention deleted, its backlog and how long it is behind

UPDATE retention_policies SET backlog = 12, behind_since = taskpool_now() - interval '90 seconds',
                              pruned_total = 345, last_error = NULL
WHERE name = 'platform_events';
SELECT is((SELECT value FROM taskpool_metrics()
           WHERE metric = 'taskpool_retention_pruned_total' AND labels = '{"policy": "platform_events"}'),
    345::double precision, 'Should report what each policy has deleted as a counter');
SELECT is((SELECT value FROM taskpool_metrics()
           WHERE metric = 'taskpool_retention_backlog' AND labels = '{"policy": "platform_events"}'),
    12::double precision, 'Should report a policy''s backlog');
SELECT is((SELECT value FROM taskpool_metrics()
           WHERE metric = 'taskpool_retention_behind_seconds' AND labels = '{"policy": "platform_events"}'),
    90::double precision, 'Should report how long a policy has been behind');
SELECT is((SELECT value FROM taskpool_metrics()
           WHERE metric = 'taskpool_retention_last_run_failed' AND labels = '{"policy": "platform_events"}'),
    0::double precision, 'Should report whether a policy''s last run failed');
SELECT is_empty(
    $$SELECT FROM taskpool_metrics() WHERE metric = 'taskpool_retention_backlog' AND labels = '{"policy": "silent_workers"}'$$,
    'Should report no backlog for a disabled policy');

SELECT * FROM finish();
ROLLBACK;
