-- After the upgrade in place (`make test-upgrade`): the seeded tasks kept their states and
-- history, and the upgraded functions work on them.
BEGIN;
SELECT plan(27);

SELECT results_eq(
    $$SELECT dedupe_key, status FROM worker_tasks ORDER BY id$$,
    $$VALUES ('upgrade:pending', 'pending'), ('upgrade:completed', 'completed'),
             ('upgrade:running', 'running'), ('upgrade:failed', 'failed'),
             ('upgrade:later', 'pending'), ('upgrade:claimed', 'claimed'),
             ('upgrade:store-running', 'running'), ('upgrade:store-pending', 'pending')$$,
    'Should keep every seeded task in its state across the upgrade'
);
SELECT is(
    (SELECT result FROM worker_tasks WHERE dedupe_key = 'upgrade:completed'), '{"ok": true}'::jsonb,
    'Should keep the completed task''s result'
);
SELECT is(
    (SELECT count(*)::int FROM worker_task_attempts a JOIN worker_tasks t ON t.id = a.task_id
     WHERE t.dedupe_key = 'upgrade:failed' AND a.error_message = 'boom'),
    1,
    'Should keep the failed attempt''s history'
);
SELECT is(
    (SELECT count(*)::int FROM worker_tasks WHERE status IN ('claimed', 'running') AND claim_token IS NULL),
    0,
    'Should give every task claimed before the upgrade a claim_token'
);
SELECT is(
    (SELECT heartbeat_task(id, 'upgrade-w', attempt, gen_random_uuid()) FROM worker_tasks WHERE dedupe_key = 'upgrade:running'),
    'lost',
    'Should refuse a call on a claim made before the upgrade without the token the upgrade gave it'
);
SELECT is(
    (SELECT heartbeat_task(id, 'upgrade-w', attempt, claim_token) FROM worker_tasks WHERE dedupe_key = 'upgrade:running'),
    'continue',
    'Should let the claim made before the upgrade heartbeat with the claim_token the upgrade gave it'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t,
        LATERAL complete_task(t.id, 'upgrade-w', t.attempt, t.claim_token, '{"after": "upgrade"}') c
     WHERE t.dedupe_key = 'upgrade:running'),
    'completed',
    'Should let it complete the task it claimed before the upgrade'
);
SELECT is(
    (SELECT dedupe_key FROM claim_and_start_tasks('analytics_refresh', 'upgrade-w2', 5)),
    'upgrade:pending',
    'Should claim the task that was pending across the upgrade'
);
SELECT is(
    (SELECT id FROM enqueue_task('analytics_refresh', dedupe_key := 'upgrade:pending')),
    (SELECT id FROM worker_tasks WHERE dedupe_key = 'upgrade:pending'),
    'Should still dedupe against a task enqueued before the upgrade'
);
SELECT is(
    (SELECT status FROM retry_task((SELECT id FROM worker_tasks WHERE dedupe_key = 'upgrade:failed'))),
    'pending',
    'Should retry a task that failed before the upgrade'
);
SELECT ok(
    (SELECT scheduled_for > now() FROM worker_tasks WHERE dedupe_key = 'upgrade:later'),
    'Should keep a task scheduled for later'
);

-- Every seeded task that is not finished finishes through the upgraded functions.
SELECT is(
    (SELECT c.status FROM worker_tasks t,
        LATERAL complete_task(t.id, 'upgrade-w2', t.attempt, t.claim_token, '{"after": "upgrade"}') c
     WHERE t.dedupe_key = 'upgrade:pending'),
    'completed',
    'Should complete the task that was pending across the upgrade'
);
SELECT is(
    (SELECT s.status FROM worker_tasks t, LATERAL start_task(t.id, 'upgrade-w', t.attempt, t.claim_token) s
     WHERE t.dedupe_key = 'upgrade:claimed'),
    'running',
    'Should start a task claimed before the upgrade'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t, LATERAL complete_task(t.id, 'upgrade-w', t.attempt, t.claim_token) c
     WHERE t.dedupe_key = 'upgrade:claimed'),
    'completed',
    'Should complete a task claimed before the upgrade'
);
SELECT is(
    (SELECT count(*)::int FROM claim_and_start_tasks('product_resync', 'upgrade-w3', 5)),
    0,
    'Should not claim a store''s pending task while its task from before the upgrade runs'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t, LATERAL complete_task(t.id, 'upgrade-w', t.attempt, t.claim_token) c
     WHERE t.dedupe_key = 'upgrade:store-running'),
    'completed',
    'Should complete the store''s task that ran across the upgrade'
);
SELECT is(
    (SELECT dedupe_key FROM claim_and_start_tasks('product_resync', 'upgrade-w3', 5)),
    'upgrade:store-pending',
    'Should claim the store''s waiting task once its running task completed'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t, LATERAL complete_task(t.id, 'upgrade-w3', t.attempt, t.claim_token) c
     WHERE t.dedupe_key = 'upgrade:store-pending'),
    'completed',
    'Should complete it'
);
SELECT is(
    (SELECT c.status FROM claim_and_start_tasks('analytics_refresh', 'upgrade-w4', 5) t,
        LATERAL complete_task(t.id, 'upgrade-w4', t.attempt, t.claim_token) c
     WHERE t.dedupe_key = 'upgrade:failed'),
    'completed',
    'Should claim and complete the task that failed before the upgrade and was retried after it'
);
SELECT results_eq(
    $$SELECT dedupe_key, status FROM worker_tasks ORDER BY id$$,
    $$VALUES ('upgrade:pending', 'completed'), ('upgrade:completed', 'completed'),
             ('upgrade:running', 'completed'), ('upgrade:failed', 'completed'),
             ('upgrade:later', 'pending'), ('upgrade:claimed', 'completed'),
             ('upgrade:store-running', 'completed'), ('upgrade:store-pending', 'completed')$$,
    'Should leave every seeded task finished but the one scheduled for later'
);
SELECT is(
    (SELECT count(*)::int FROM worker_tasks WHERE status IN ('claimed', 'running')),
    0,
    'Should leave no task claimed or running'
);
-- task_roles_backoff_jitter: full jitter is for roles made after it; the roles there before
-- keep the deterministic doubling their retries had. make test-upgrade sets old_roles_jitter:
-- none for a release of the combined plan (its crawler roles predate the change), full for one
-- of the split plans (the core, jitter included, is deployed before the crawler's roles).
SELECT results_eq(
    $$SELECT DISTINCT backoff_jitter, backoff_multiplier FROM task_roles WHERE role = 'product_resync'$$,
    format($$VALUES (%L::text, 2::numeric)$$, :'old_roles_jitter'),
    'Should keep a role of before the upgrade on the backoff it had'
);

-- The finished tasks of the upgraded database move to the history by the tick's mover, once
-- counted by the metrics: every seeded task but the later one, with the failed attempt's history.
SELECT set_taskpool_clock_offset('1 minute');
UPDATE task_metric_watermark SET folded_before = now() + interval '1 minute';
SELECT lives_ok($$SELECT set_task_history(history_after := interval '0')$$, 'Should set history_after to 0');
SELECT is(move_tasks_to_history(), 7::bigint, 'Should move the seeded tasks finished before now to the history');
SELECT results_eq(
    $$SELECT dedupe_key, status, in_history FROM worker_tasks_with_history ORDER BY id$$,
    $$VALUES ('upgrade:pending', 'completed', true), ('upgrade:completed', 'completed', true),
             ('upgrade:running', 'completed', true), ('upgrade:failed', 'completed', true),
             ('upgrade:later', 'pending', false), ('upgrade:claimed', 'completed', true),
             ('upgrade:store-running', 'completed', true), ('upgrade:store-pending', 'completed', true)$$,
    'Should find every task through worker_tasks_with_history, the finished ones in the history'
);
SELECT is(
    (SELECT count(*)::int FROM worker_task_attempt_history a JOIN worker_task_history t ON t.id = a.task_id
     WHERE t.dedupe_key = 'upgrade:failed' AND a.error_message = 'boom'),
    1,
    'Should move the failed attempt''s history with its task'
);
SELECT is((SELECT tasks FROM v_task_counts WHERE status = 'completed' AND role = (SELECT role FROM worker_task_history LIMIT 1)),
          (SELECT count(*) FROM worker_tasks_with_history w WHERE w.status = 'completed' AND w.role = (SELECT role FROM worker_task_history LIMIT 1)),
          'Should count the moved tasks in v_task_counts');

SELECT * FROM finish();
ROLLBACK;
