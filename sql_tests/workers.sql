-- workers: the worker registry (register_worker, heartbeat_worker, deregister_worker), the
-- per-role run timeout workers read, and the schema version they check at start-up.
BEGIN;
SELECT plan(27);

/****************************************************************************/
-- Structure

SELECT has_table('task_workers', 'Should have table task_workers');
SELECT col_is_pk('task_workers', 'worker_id', 'Should key task_workers by worker_id');
SELECT fk_ok('task_workers', 'role', 'task_roles', 'role', 'Should tie a worker to a known role');
SELECT col_type_is('task_roles', 'run_timeout', 'interval', 'Should type task_roles.run_timeout as interval');
SELECT col_default_is('task_roles', 'run_timeout', '01:00:00'::text, 'Should default run_timeout to one hour');
SELECT function_returns('register_worker', ARRAY['text', 'text', 'text', 'integer'], 'worker_registration',
    'Should return the registry row, with the role''s settings, from register_worker');
SELECT function_returns('heartbeat_worker', ARRAY['text'], 'boolean', 'Should return boolean from heartbeat_worker');
SELECT function_returns('deregister_worker', ARRAY['text'], 'boolean', 'Should return boolean from deregister_worker');
SELECT is_definer('register_worker', ARRAY['text', 'text', 'text', 'integer'], 'Should make register_worker SECURITY DEFINER');
SELECT is_definer('heartbeat_worker', ARRAY['text'], 'Should make heartbeat_worker SECURITY DEFINER');
SELECT is_definer('deregister_worker', ARRAY['text'], 'Should make deregister_worker SECURITY DEFINER');

/****************************************************************************/
-- Behaviour

SELECT results_eq(
    $$SELECT worker_id, role, host, pid, started_at, last_seen_at
      FROM register_worker('t10-w1', 'product_resync', 'host-a', 4242)$$,
    $$VALUES ('t10-w1'::text, 'product_resync'::text, 'host-a'::text, 4242, now(), now())$$,
    'Should register a worker, seen now');
SELECT is((SELECT count(*) FROM task_workers WHERE worker_id = 't10-w1'), 1::bigint,
    'Should store one registry row');

UPDATE task_workers SET started_at = now() - interval '1 day', last_seen_at = now() - interval '1 hour'
WHERE worker_id = 't10-w1';
SELECT ok(heartbeat_worker('t10-w1'), 'Should answer true to a registered worker''s heartbeat');
SELECT is((SELECT last_seen_at FROM task_workers WHERE worker_id = 't10-w1'), now(),
    'Should mark the worker seen now');
SELECT is((SELECT started_at FROM task_workers WHERE worker_id = 't10-w1'), now() - interval '1 day',
    'Should leave started_at alone on a heartbeat');

SELECT results_eq(
    $$SELECT role, host, pid, started_at FROM register_worker('t10-w1', 'store_discovery', 'host-b', 7)$$,
    $$VALUES ('store_discovery'::text, 'host-b'::text, 7, now())$$,
    'Should re-register a known id as a new start');
SELECT is((SELECT count(*) FROM task_workers WHERE worker_id = 't10-w1'), 1::bigint,
    'Should still hold one row after re-registering');

SELECT ok(deregister_worker('t10-w1'), 'Should answer true when deregistering a registered worker');
SELECT is((SELECT count(*) FROM task_workers WHERE worker_id = 't10-w1'), 0::bigint,
    'Should remove the worker from the registry');
SELECT ok(NOT deregister_worker('t10-w1'), 'Should answer false when deregistering twice');
SELECT ok(NOT heartbeat_worker('t10-w1'), 'Should answer false to a heartbeat of an unregistered worker');

SELECT is(taskpool_schema_version(), '0.9.0', 'Should report the schema version');

/****************************************************************************/
-- Bad input

SELECT throws_ok($$SELECT register_worker('t10-w2', 'nope', 'h', 1)$$, '22023', 'unknown role ''nope''',
    'Should refuse to register a worker for an unknown role');
SELECT throws_ok($$SELECT register_worker('', 'product_resync', 'h', 1)$$, '22023',
    'worker_id must be 1 to 200 characters, not 0', 'Should refuse an empty worker_id');
SELECT throws_ok($$SELECT register_worker('t10-w2', 'product_resync', NULL, 1)$$, '22004',
    'worker_id, role, host and pid are all required', 'Should refuse a NULL host');
SELECT is((SELECT count(*) FROM task_workers WHERE worker_id IN ('t10-w2', '')), 0::bigint,
    'Should register nothing for bad input');

SELECT * FROM finish();
ROLLBACK;
