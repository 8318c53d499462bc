-- The lean claim (issue 13): no subtransaction, a cached generic plan, and the contract kept: an
-- operator's own INSERT of a pending task is claimable, per-store exclusion holds for it, and a
-- direct UPDATE still cannot make an illegal transition.
BEGIN;
SELECT plan(15);

INSERT INTO task_roles (role, requires_store, max_retries, backoff_base, backoff_cap) VALUES
    ('test_lean_plain', false, 3, '10 seconds', '5 minutes'),
    ('test_lean_store', true, 3, '10 seconds', '5 minutes');
INSERT INTO dispensaries (name, platform, active) VALUES ('Lean Store', 'simulated', true);

SELECT ok(
    (SELECT 'plan_cache_mode=force_generic_plan' = ANY (proconfig) FROM pg_proc
     WHERE oid = '_claim_tasks(text, text, integer, boolean)'::regprocedure),
    'Should claim with a cached generic plan, not a plan made for each call'
);
SELECT ok(
    (SELECT 'jit=off' = ANY (proconfig) FROM pg_proc
     WHERE oid = '_claim_tasks(text, text, integer, boolean)'::regprocedure),
    'Should claim without JIT: the generic plan, blind to the LIMIT, looks costly enough to compile at every call'
);
SELECT ok(
    (SELECT pg_get_functiondef('_claim_tasks(text, text, integer, boolean)'::regprocedure) !~* 'EXCEPTION\s+WHEN'),
    'Should claim without an exception block (no subtransaction per claim)'
);

-- An operator's direct INSERT: only the columns a pending task needs.
INSERT INTO worker_tasks (role, payload) VALUES ('test_lean_plain', '{"by": "operator"}');
SELECT is(
    (SELECT payload ->> 'by' FROM claim_and_start_tasks('test_lean_plain', 'lean-w1', 5)),
    'operator',
    'Should claim a pending task an operator inserted directly'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t,
        LATERAL complete_task(t.id, 'lean-w1', t.attempt, tests.claim_token(t.id, t.attempt), '{"ok": true}') c
     WHERE t.role = 'test_lean_plain'),
    'completed',
    'Should complete it'
);
SELECT is(
    (SELECT count(*)::int FROM claim_and_start_tasks('test_lean_plain', 'lean-w1', 5)),
    0,
    'Should then find nothing to claim'
);

-- Per-store exclusion for directly inserted tasks: the second waits for the first.
INSERT INTO worker_tasks (role, dispensary_id, priority, payload)
SELECT 'test_lean_store', d.id, p, jsonb_build_object('n', p)
FROM dispensaries d, (VALUES (2), (1)) AS v(p)
WHERE d.name = 'Lean Store';
SELECT is(
    (SELECT array_agg(payload ->> 'n') FROM claim_and_start_tasks('test_lean_store', 'lean-w2', 5)),
    ARRAY['2'],
    'Should claim one task of a store per batch, the higher priority first'
);
SELECT is(
    (SELECT count(*)::int FROM claim_and_start_tasks('test_lean_store', 'lean-w3', 5)),
    0,
    'Should claim nothing of a store whose task runs, without an error'
);
SELECT is(
    (SELECT c.status FROM worker_tasks t, LATERAL complete_task(t.id, 'lean-w2', t.attempt, tests.claim_token(t.id, t.attempt)) c
     WHERE t.role = 'test_lean_store' AND t.status = 'running'),
    'completed',
    'Should complete the store''s running task'
);
SELECT is(
    (SELECT payload ->> 'n' FROM claim_and_start_tasks('test_lean_store', 'lean-w3', 5)),
    '1',
    'Should then claim the store''s other task'
);

-- The database still refuses what the functions would never do.
SELECT throws_ok(
    $$UPDATE worker_tasks SET status = 'pending' WHERE role = 'test_lean_plain'$$,
    '23514', NULL,
    'Should refuse a direct UPDATE completed -> pending'
);
SELECT throws_ok(
    $$INSERT INTO worker_tasks (role, status) VALUES ('test_lean_plain', 'running')$$,
    '23514', NULL,
    'Should refuse a direct INSERT of a task that is not pending'
);
INSERT INTO worker_tasks (role) VALUES ('test_lean_plain');
SELECT throws_ok(
    $$UPDATE worker_tasks SET status = 'bogus' WHERE role = 'test_lean_plain' AND status = 'pending'$$,
    '23514', NULL,
    'Should refuse a direct UPDATE to a status no transition leads to'
);

-- The one BEFORE trigger stamps updated_at on any UPDATE, whatever it sets.
UPDATE worker_tasks SET payload = '{"touched": true}', updated_at = '2000-01-01'
WHERE role = 'test_lean_plain' AND status = 'pending';
SELECT is(
    (SELECT updated_at FROM worker_tasks WHERE role = 'test_lean_plain' AND status = 'pending'),
    taskpool_now(),
    'Should stamp updated_at on a direct UPDATE that does not touch status'
);
SELECT is(
    (SELECT count(*)::int FROM pg_trigger
     WHERE tgrelid = 'worker_tasks'::regclass AND NOT tgisinternal AND tgtype & 2 = 2),
    1,
    'Should run one BEFORE row trigger on worker_tasks'
);

SELECT * FROM finish();
ROLLBACK;
