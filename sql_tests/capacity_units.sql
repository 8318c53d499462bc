-- capacity_units: capacity in slots and in processes. A worker process runs up to its
-- concurrency of tasks at once (its slots); a role's rate is a slot's, so the drain estimate
-- divides by slots, and the processes needed are the slots needed over the slots a process has.
-- Workers of concurrency 20, as the Kubernetes manifests run them.
BEGIN;
SELECT plan(21);

INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap)
SELECT r, 'pgTAP capacity_units', false, 3, '10 minutes', '30 seconds', '1 hour'
FROM unnest(ARRAY['t58_a', 't58_b', 't58_c']) AS r;

-- pg_temp.completed: a task of the role claimed and completed in the last hour, claim to
-- completion taking `took` (only timestamps are backdated).
CREATE FUNCTION pg_temp.completed(role text, took interval)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id   bigint := tests.make_task(role := completed.role);
    v_task worker_tasks;
BEGIN
    SELECT * INTO v_task FROM claim_task(completed.role, 't58-history');
    IF v_task.id IS DISTINCT FROM v_id THEN
        RAISE EXCEPTION 'pg_temp.completed claimed task % instead of %', v_task.id, v_id;
    END IF;
    PERFORM complete_task(v_task.id, v_task.worker_id, v_task.attempt, tests.claim_token(v_task.id, v_task.attempt), '{}');
    UPDATE worker_tasks t
    SET claimed_at = now() - interval '5 minutes' - completed.took, completed_at = now() - interval '5 minutes'
    WHERE t.id = v_task.id;
    RETURN v_task.id;
END;
$$;

-- t58_a: 1200 s and 2400 s a task (2.0 a slot-hour), 400 ready; two live processes of 20 slots
-- and a third of 20 silent for 5 minutes.
SELECT pg_temp.completed('t58_a', interval '1200 seconds') AS done \gset
SELECT pg_temp.completed('t58_a', interval '2400 seconds') AS done \gset
SELECT count(tests.make_task(role := 't58_a')) AS made FROM generate_series(1, 400) \gset
SELECT count(*) AS registered FROM register_worker('t58-a-1', ARRAY['t58_a'], 'pod-1', 101, 20);
SELECT count(*) AS registered FROM register_worker('t58-a-2', ARRAY['t58_a', 't58_c'], 'pod-2', 102, 20);
SELECT count(*) AS registered FROM register_worker('t58-a-3', ARRAY['t58_a'], 'pod-3', 103, 20);
UPDATE task_workers SET last_seen_at = now() - interval '5 minutes' WHERE worker_id = 't58-a-3';
-- t58_b: 600 s and 1200 s a task (4.0 a slot-hour), 100 ready; its only process, of 10
-- slots, silent for an hour (scaled to zero).
SELECT pg_temp.completed('t58_b', interval '600 seconds') AS done \gset
SELECT pg_temp.completed('t58_b', interval '1200 seconds') AS done \gset
SELECT count(tests.make_task(role := 't58_b')) AS made FROM generate_series(1, 100) \gset
SELECT count(*) AS registered FROM register_worker('t58-b-1', ARRAY['t58_b'], 'pod-4', 104, 10);
UPDATE task_workers SET last_seen_at = now() - interval '1 hour' WHERE worker_id = 't58-b-1';

/****************************************************************************/
-- Registration

SELECT is((SELECT concurrency FROM task_workers WHERE worker_id = 't58-a-1'), 20,
    'Should keep the concurrency a worker registers with');
SELECT throws_ok($$SELECT * FROM register_worker('t58-x', ARRAY['t58_a'], 'pod', 1, 0)$$, '22023',
    'concurrency must be 1 to 100000, not 0', 'Should refuse a concurrency of 0');
SELECT throws_ok($$SELECT * FROM register_worker('t58-x', ARRAY['t58_a'], 'pod', 1, NULL)$$, '22004',
    'concurrency is required', 'Should refuse a NULL concurrency');
SELECT is((SELECT count(*) FROM task_workers WHERE worker_id = 't58-x'), 0::bigint,
    'Should register nothing for a refused concurrency');
SELECT ok(has_function_privilege('taskpool_worker', 'register_worker(text, text[], text, integer, integer)', 'execute'),
    'Should let taskpool_worker register with its concurrency');

/****************************************************************************/
-- v_worker_capacity in slots and processes

SELECT results_eq(
    $$SELECT active_workers, active_processes, active_slots, slots_per_process, tasks_per_slot_hour, tasks_per_worker_hour
      FROM v_worker_capacity WHERE role = 't58_a'$$,
    $$VALUES (2::bigint, 2::bigint, 40, 20.0::numeric, 2.0::numeric, 2.0::numeric)$$,
    'Should count 2 live processes of 20 slots: 40 slots, a slot''s rate 2.0 an hour');
SELECT is((SELECT estimated_hours_to_drain FROM v_worker_capacity WHERE role = 't58_a'), 5.00,
    'Should drain 400 tasks in 400 / (40 slots * 2.0) = 5 hours, not 400 / (2 processes * 2.0) = 100');
SELECT results_eq(
    $$SELECT slots_needed_for_1_hour, slots_needed_for_4_hours, slots_needed_for_8_hours FROM v_worker_capacity WHERE role = 't58_a'$$,
    $$VALUES (200, 50, 25)$$,
    'Should need 200, 50 and 25 slots to drain 400 tasks at 2.0 a slot-hour in 1, 4 and 8 hours');
SELECT results_eq(
    $$SELECT processes_needed_for_1_hour, processes_needed_for_4_hours, processes_needed_for_8_hours,
             workers_needed_for_1_hour, workers_needed_for_4_hours, workers_needed_for_8_hours
      FROM v_worker_capacity WHERE role = 't58_a'$$,
    $$VALUES (10, 3, 2, 10, 3, 2)$$,
    'Should need 10, 3 and 2 processes of 20 slots (workers_needed are processes)');
SELECT results_eq(
    $$SELECT active_processes, active_slots, slots_per_process, estimated_hours_to_drain,
             slots_needed_for_1_hour, processes_needed_for_1_hour
      FROM v_worker_capacity WHERE role = 't58_b'$$,
    $$VALUES (0::bigint, 0, 10.0::numeric, NULL::numeric, 25, 3)$$,
    'Should take the slots of the processes registered for a role none runs now: 25 slots are 3 processes of 10');
SELECT results_eq(
    $$SELECT active_processes, active_slots, slots_per_process FROM v_worker_capacity WHERE role = 't58_c'$$,
    $$VALUES (1::bigint, 20, 20.0::numeric)$$,
    'Should count a process that serves several roles, with all its slots, for each of them');
SELECT results_eq(
    $$SELECT active_slots, slots_per_process, processes_needed_for_1_hour FROM v_worker_capacity WHERE role = 'store_discovery'$$,
    $$VALUES (0, 1.0::numeric, 0)$$,
    'Should count one slot per process for a role no process ever registered for, and need none with nothing pending');
SELECT is(task_slots_wanted('t58_a', 1), 200,
    'Should leave task_slots_wanted (what KEDA reads) in slots: 400 ready at 2.0 a slot-hour');

/****************************************************************************/
-- worker_capacity: the seed's keys in processes, the slots beside them

SELECT is(worker_capacity('t58_a') -> 'workers_needed',
    '{"for_1_hour": 10, "for_4_hours": 3, "for_8_hours": 2}'::jsonb,
    'Should give workers_needed in processes');
SELECT is(worker_capacity('t58_a') -> 'processes_needed', worker_capacity('t58_a') -> 'workers_needed',
    'Should give processes_needed, the same as workers_needed');
SELECT is(worker_capacity('t58_a') -> 'slots_needed',
    '{"for_1_hour": 200, "for_4_hours": 50, "for_8_hours": 25}'::jsonb,
    'Should give slots_needed in slots');
SELECT is((SELECT jsonb_object_agg(k, worker_capacity('t58_a') -> k)
           FROM unnest(ARRAY['active_workers', 'active_processes', 'active_slots', 'slots_per_process',
                             'tasks_per_slot_hour', 'estimated_hours_to_drain']) AS k),
    '{"active_workers": 2, "active_processes": 2, "active_slots": 40, "slots_per_process": 20.0,
      "tasks_per_slot_hour": 2.0, "estimated_hours_to_drain": 5.00}'::jsonb,
    'Should give the active processes and slots, the slots a process has, a slot''s rate and the drain estimate');

/****************************************************************************/
-- Metrics

SELECT is((SELECT value FROM taskpool_metrics() WHERE metric = 'taskpool_slots_active' AND labels ->> 'role' = 't58_a'),
    40::double precision, 'Should give the active slots as taskpool_slots_active');
SELECT is((SELECT value FROM taskpool_metrics() WHERE metric = 'taskpool_workers_active' AND labels ->> 'role' = 't58_a'),
    2::double precision, 'Should give the active processes as taskpool_workers_active');
SELECT is((SELECT value FROM taskpool_metrics()
           WHERE metric = 'taskpool_workers_needed' AND labels = '{"role": "t58_a", "horizon": "1h"}'),
    10::double precision, 'Should give the processes needed as taskpool_workers_needed');
SELECT is((SELECT value FROM taskpool_metrics()
           WHERE metric = 'taskpool_slots_needed' AND labels = '{"role": "t58_a", "horizon": "1h"}'),
    200::double precision, 'Should give the slots needed as taskpool_slots_needed');

SELECT * FROM finish();
ROLLBACK;
