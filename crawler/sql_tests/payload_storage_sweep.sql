-- payload_storage_sweep: what the storage sweep asks the database (unrecorded_payload_paths:
-- which listed paths no payload row names) and the role and schedule that run the sweep without
-- an operator. The sweep itself, against a directory and a bucket, is
-- crawler/tests/test_crawler_object_storage.py.
BEGIN;
SELECT plan(11);

/****************************************************************************/
-- structure

SELECT ok(has_function_privilege('taskpool_worker', 'unrecorded_payload_paths(text[])', 'EXECUTE'),
    'Should let a crawler worker ask which stored paths have no row');
SELECT ok(NOT has_function_privilege('public', 'unrecorded_payload_paths(text[])', 'EXECUTE'),
    'Should not let PUBLIC ask');
SELECT ok(EXISTS (SELECT FROM task_roles WHERE role = 'payload_storage_sweep' AND NOT requires_store),
    'Should have the role payload_storage_sweep, which needs no store');
SELECT results_eq(
    $$SELECT role, kind, every, enabled, payload FROM task_schedules WHERE name = 'payload_storage_sweep'$$,
    $$VALUES ('payload_storage_sweep', 'single', interval '6 hours', true, '{"older_than_seconds": 21600}'::jsonb)$$,
    'Should schedule the sweep every 6 hours, leaving objects younger than 6 hours');

/****************************************************************************/
-- unrecorded_payload_paths

INSERT INTO dispensaries (name, platform) VALUES ('t56 Store', 't56');
SELECT id AS store FROM dispensaries WHERE name = 't56 Store' \gset
SELECT record_crawl_payload(:store, '2026-03-01 08:00:00+00',
    format('payloads/2026/03/01/store_%s_20260301T080000000000Z.json.gz', :store), 100, repeat('a', 64)) IS NOT NULL AS recorded \gset
SELECT format('payloads/2026/03/01/store_%s_20260301T080000000000Z.json.gz', :store) AS recorded_path \gset

SELECT results_eq(
    format($$SELECT unrecorded_payload_paths(ARRAY[%L, 'payloads/2026/03/01/orphan.json.gz',
             'payloads/2026/03/01/.store_1_x.json.gz.ab12.tmp', 'payloads/2026/03/01/orphan.json.gz'])$$, :'recorded_path'),
    $$VALUES ('payloads/2026/03/01/.store_1_x.json.gz.ab12.tmp'), ('payloads/2026/03/01/orphan.json.gz')$$,
    'Should return the listed paths no row names, each once, and not the recorded one');
SELECT is_empty($$SELECT unrecorded_payload_paths('{}')$$, 'Should return nothing for no paths');
SELECT throws_ok($$SELECT unrecorded_payload_paths(NULL)$$, '22023',
    'storage_paths must be an array of paths, without NULLs', 'Should refuse NULL');
SELECT throws_ok($$SELECT unrecorded_payload_paths(ARRAY['a', NULL])$$, '22023',
    'storage_paths must be an array of paths, without NULLs', 'Should refuse a NULL path');
SELECT throws_ok($$SELECT unrecorded_payload_paths(array_fill('a'::text, ARRAY[10001]))$$, '22023',
    'storage_paths may hold at most 10000 paths, not 10001', 'Should refuse more than 10000 paths');

/****************************************************************************/
-- a payload whose row retention deleted is unrecorded: the sweep may remove it before the outbox

DELETE FROM raw_crawl_payloads WHERE dispensary_id = :store;
SELECT results_eq(
    format($$SELECT unrecorded_payload_paths(ARRAY[%L])$$, :'recorded_path'),
    format($$VALUES (%L)$$, :'recorded_path'),
    'Should count a path whose row is gone as unrecorded');

/****************************************************************************/
-- the tick enqueues the sweep when it is due

UPDATE task_schedules SET next_run_at = now() - interval '1 minute' WHERE name = 'payload_storage_sweep';
SELECT tick_schedules() IS NOT NULL AS ticked \gset
SELECT results_eq(
    $$SELECT payload FROM worker_tasks WHERE role = 'payload_storage_sweep'$$,
    $$VALUES ('{"older_than_seconds": 21600}'::jsonb)$$,
    'Should enqueue a payload_storage_sweep with the schedule''s grace when due');

SELECT * FROM finish();
ROLLBACK;
