-- After the upgrade in place (`make test-upgrade`): the seeded tasks kept their states and
-- history, and the upgraded functions work on them.
BEGIN;
SELECT plan(9);

SELECT results_eq(
    $$SELECT dedupe_key, status FROM worker_tasks ORDER BY id$$,
    $$VALUES ('upgrade:pending', 'pending'), ('upgrade:completed', 'completed'),
             ('upgrade:running', 'running'), ('upgrade:failed', 'failed'),
             ('upgrade:later', 'pending')$$,
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
    (SELECT heartbeat_task(id, 'upgrade-w', attempt) FROM worker_tasks WHERE dedupe_key = 'upgrade:running'),
    'continue',
    'Should let the worker that claimed before the upgrade heartbeat its task'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t,
        LATERAL complete_task(t.id, 'upgrade-w', t.attempt, '{"after": "upgrade"}') c
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

SELECT * FROM finish();
ROLLBACK;
