-- Deploy taskpool:catalog_comments to pg
-- requires: worker_tasks
-- requires: acquire_platform_request
-- requires: cancel_task
-- requires: claim_and_start_tasks
-- requires: claim_task
-- requires: claim_tasks
-- requires: complete_task
-- requires: complete_tasks_follow_up_parents
-- requires: count_prunable_tasks
-- requires: deregister_worker
-- requires: enqueue_task_headers
-- requires: enqueue_tasks
-- requires: fail_task
-- requires: heartbeat_task
-- requires: heartbeat_tasks
-- requires: heartbeat_worker
-- requires: mark_worker_waiting
-- requires: prune_tasks
-- requires: prune_tasks_in_batches
-- requires: record_platform_result
-- requires: recover_stale_tasks
-- requires: register_task_waits
-- requires: register_worker
-- requires: release_task
-- requires: retry_task
-- requires: set_taskpool_clock_offset
-- requires: snooze_task
-- requires: start_task
-- requires: task_chain
-- requires: task_wait_channel
-- requires: taskpool_health
-- requires: taskpool_now
-- requires: tick_schedules
-- requires: trigger_schedule
-- requires: update_schedule
-- requires: worker_capacity
-- requires: worker_wake_channel
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

-- catalog_comments
-- Comments every public function of the queue core with its header sentence and an example, so
-- that \df+ and \sf document themselves (a comment above CREATE FUNCTION never reaches the
-- database), and says what each status means. The crawler's functions are
-- crawler_catalog_comments'; the views carry theirs from their own changes.
--
-- A comment belongs to the object, not to its body: CREATE OR REPLACE keeps it, but DROP and
-- CREATE (a signature change) loses it. sql_tests/46_catalog_comments.sql fails then, naming the
-- function, and the change that recreates it adds its COMMENT ON FUNCTION.

COMMENT ON FUNCTION acquire_platform_request(text) IS $$Asks to send one request to a platform: 0 means go now, more is the seconds to wait before asking again.
Example:
  SELECT acquire_platform_request('dutchie');   -- 0: send it; 0.5: wait half a second, ask again$$;

COMMENT ON FUNCTION cancel_task(bigint) IS $$Cancels a task: a pending one at once; a claimed or running one at its worker's next heartbeat.
Example:
  SELECT status, cancel_requested_at FROM cancel_task(42);$$;

COMMENT ON FUNCTION claim_and_start_tasks(text, text, integer) IS $$Claims and starts up to max_tasks ready tasks of a role in one transaction; returns them.
Example:
  SELECT id, attempt, claim_token, payload FROM claim_and_start_tasks('product_resync', 'w1');$$;

COMMENT ON FUNCTION claim_task(text, text) IS $$Claims the next ready task of a role for a worker: the task row, or no row.
Example:
  SELECT claim_task('product_resync', 'w1');
  SELECT id, dispensary_id, attempt, claim_token, payload FROM claim_task('product_resync', 'w1');$$;

COMMENT ON FUNCTION claim_tasks(text, text, integer) IS $$Claims up to max_tasks ready tasks of a role for a worker, at most one per store; returns them.
Example:
  SELECT id, dispensary_id, attempt, claim_token FROM claim_tasks('product_resync', 'w1', 10);$$;

COMMENT ON FUNCTION complete_task(bigint, text, integer, uuid, jsonb, jsonb) IS $$Records a task's success and result, and enqueues its follow-up tasks in the same transaction.
Example:
  SELECT status FROM complete_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', '{"products": 118}',
      follow_ups := '[{"role": "product_refresh", "dispensary_id": 7, "payload": {"payload_id": 9}}]');$$;

COMMENT ON FUNCTION complete_tasks(text, jsonb) IS $$Records the success of several tasks a worker holds in one transaction, with their results and follow-up tasks; says for each whether it was recorded.
Example:
  SELECT * FROM complete_tasks('w1', '[
      {"task_id": 41, "attempt": 1, "claim_token": "5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10",
       "result": {"ok": true}},
      {"task_id": 42, "attempt": 2, "claim_token": "0e7d5f3a-2c8b-4f1e-a6d9-3b4c5d6e7f80",
       "follow_ups": [{"role": "product_refresh", "dispensary_id": 7}]}]');$$;

COMMENT ON FUNCTION count_prunable_tasks(interval) IS $$Counts the finished tasks prune_tasks(older_than) would delete now, deleting nothing: a prune's dry run.
Example:
  SELECT count_prunable_tasks(interval '7 days');$$;

COMMENT ON FUNCTION deregister_worker(text) IS $$Removes a stopping worker from the registry; false when it was not registered.
Example:
  SELECT deregister_worker('w1');$$;

COMMENT ON FUNCTION enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb) IS $$Adds one task to the pool and returns it; with a dedupe_key, returns the active task that already has it.
Example:
  SELECT id, status FROM enqueue_task('product_resync', '{"reason": "manual"}',
                                      dispensary_id := 42, priority := 10);$$;

COMMENT ON FUNCTION enqueue_tasks(jsonb) IS $$Adds many tasks in one statement (a JSON array of specs); all or nothing.
Example:
  SELECT count(*) FROM enqueue_tasks('[
      {"role": "product_resync", "dispensary_id": 1, "priority": 5},
      {"role": "analytics_refresh", "dedupe_key": "analytics:2026-01-31"}]');$$;

COMMENT ON FUNCTION fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb) IS $$Records a failed attempt: back to pending after a backoff while retries remain, else failed.
Example:
  SELECT status, retry_count, scheduled_for FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'HTTP 503 from platform');
  SELECT status FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'store closed', retryable := false);
  SELECT status FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'KeyError: ''price''',
                               error_details := E'Traceback (most recent call last):\n...');
  SELECT status FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'command exited with status 3: no such store',
                               error_data := '{"exit_code": 3, "stderr_tail": "no such store"}');$$;

COMMENT ON FUNCTION heartbeat_task(bigint, text, integer, uuid) IS $$Keeps a worker's task alive and answers what the worker should do: continue, cancel_requested, lost or not_found.
Example:
  SELECT heartbeat_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10');   -- 'continue'$$;

COMMENT ON FUNCTION heartbeat_tasks(text, bigint[], integer[], uuid[]) IS $$Keeps all the tasks a worker holds alive in one call and answers, for each, what heartbeat_task would: continue, cancel_requested, lost or not_found; or busy: another transaction is changing the task this instant (its completion, a cancel, a recovery), so it was not beaten this time.
Example:
  SELECT * FROM heartbeat_tasks('w1', ARRAY[41, 42], ARRAY[1, 3],
      ARRAY['5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', '0e7d5f3a-2c8b-4f1e-a6d9-3b4c5d6e7f80']::uuid[]);
  -- (41, 'continue'), (42, 'cancel_requested')$$;

COMMENT ON FUNCTION heartbeat_worker(text) IS $$Marks a registered worker as seen now, busy or idle; false when it is not registered.
Example:
  SELECT heartbeat_worker('w1');   -- false: register again$$;

COMMENT ON FUNCTION mark_worker_waiting(text) IS $$A worker that found no ready task of any of its roles says it sleeps until a task of one of them is ready; true when it was not marked for one of them yet.
Example:
  SELECT mark_worker_waiting('w1');   -- true: claim once more, then sleep on LISTEN worker_wake_channel('w1')$$;

COMMENT ON FUNCTION mark_worker_waiting(text, text) IS $$A worker that found no ready task of one of its roles says it sleeps until a task of that role is ready; true when it was not marked for that role yet.
Example:
  SELECT mark_worker_waiting('w1', 'product_resync');   -- true: claim once more, then sleep on LISTEN worker_wake_channel('w1')$$;

COMMENT ON FUNCTION prune_tasks(interval, integer) IS $$Deletes finished tasks (and their attempt history) that finished longer ago than older_than; returns how many.
Example:
  SELECT prune_tasks(interval '7 days');
  SELECT prune_tasks(interval '1 day', max_tasks := 10000);   -- oldest first, in bounded bites$$;

COMMENT ON PROCEDURE prune_tasks_in_batches(interval, integer, integer, bigint) IS $$Prunes every finished task older than older_than (at most max_tasks), batch_size at a time, committing after each batch.
Example:
  CALL prune_tasks_in_batches(interval '30 days');   -- pruned: how many went
  CALL prune_tasks_in_batches(interval '7 days', batch_size := 500, max_tasks := 100000);$$;

COMMENT ON FUNCTION record_platform_result(text, boolean, text) IS $$Feeds the circuit breaker one request's outcome; returns the circuit's state, 'closed' or 'open'.
Example:
  SELECT record_platform_result('dutchie', true);
  SELECT record_platform_result('dutchie', false, 'HTTP 500');   -- the 5th in a row: 'open'$$;

COMMENT ON FUNCTION recover_stale_tasks(integer) IS $$Takes back claimed or running tasks whose worker stopped heartbeating; returns how many.
Example:
  SELECT recover_stale_tasks(10);   -- no heartbeat for 10 minutes
  SELECT recover_stale_tasks();     -- each role's task_roles.stale_threshold$$;

COMMENT ON FUNCTION register_task_waits(bigint[], boolean) IS $$Enters the calling session as a waiter for tasks (and, with descendants, every task below them through parent_id), and says where each task stands.
Example:
  LISTEN "taskpool_task_done_12345";            -- SELECT task_wait_channel()
  SELECT * FROM register_task_waits(ARRAY[42]);  -- 42 | NULL | running | true
  -- ... a notification on the channel, payload '42', once task 42 is completed, failed or cancelled
  SELECT unregister_task_waits();$$;

COMMENT ON FUNCTION register_worker(text, text, text, integer) IS $$Enters a starting worker of one role in the registry (again, if its id was there) and returns its row with the role's settings.
Example:
  SELECT max_retries, stale_threshold, run_timeout FROM register_worker('w1', 'product_resync', 'host-a', 4242);$$;

COMMENT ON FUNCTION register_worker(text, text[], text, integer) IS $$Enters a starting worker that serves several roles in the registry (again, if its id was there) and returns one row per role, in the order given, each with that role's settings.
Example:
  SELECT role, stale_threshold FROM register_worker('w1', ARRAY['product_resync', 'analytics_refresh'], 'host-a', 4242);$$;

COMMENT ON FUNCTION release_task(bigint, text, integer, uuid) IS $$Hands a worker's task back to the pool, ready now, without spending a retry (e.g. on shutdown).
Example:
  SELECT status FROM release_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10');   -- pending$$;

COMMENT ON FUNCTION retry_task(bigint) IS $$Puts a failed or cancelled task back to pending now, with a fresh retry budget.
Example:
  SELECT status, retry_count FROM retry_task(42);   -- pending, 0$$;

COMMENT ON FUNCTION set_taskpool_clock_offset(interval) IS $$Moves taskpool's clock: taskpool_now() becomes now() + clock_offset, for every session; returns the new taskpool_now().
Example:
  SELECT set_taskpool_clock_offset(interval '20 minutes');   -- jump ahead, e.g. past the stale threshold
  SELECT set_taskpool_clock_offset(interval '0');            -- back to the database's own clock$$;

COMMENT ON FUNCTION snooze_task(bigint, text, integer, uuid, timestamptz) IS $$Puts a worker's task back to pending until a given time without spending a retry.
Example:
  SELECT status, scheduled_for FROM snooze_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', now() + interval '15 minutes');$$;

COMMENT ON FUNCTION start_task(bigint, text, integer, uuid) IS $$Marks a claimed task running (claimed -> running) while the worker still holds that claim.
Example:
  SELECT status, started_at FROM start_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10');$$;

COMMENT ON FUNCTION task_chain(bigint) IS $$A task's chain: the tasks whose completions led to it (its parent, that one's parent, ...) and every follow-up below it, each with its place and status.
Example:
  SELECT id, depth, role, status FROM task_chain(42);$$;

COMMENT ON FUNCTION task_wait_channel(integer) IS $$The LISTEN channel on which a session hears that a task it waits for finished.
Example:
  SELECT task_wait_channel();   -- 'taskpool_task_done_12345': LISTEN on it, then register_task_waits$$;

COMMENT ON FUNCTION taskpool_health(interval, interval) IS $$One row per check of what needs a person: status 'ok' or 'attention', what was found, and what to do.
Example:
  SELECT * FROM taskpool_health();
  SELECT check_name, detail, action FROM taskpool_health() WHERE status <> 'ok';   -- for an alert
  SELECT * FROM taskpool_health(max_tick_age := '2 hours');   -- a scheduler ticking hourly$$;

COMMENT ON FUNCTION taskpool_now() IS $$The database clock every taskpool function reads: transaction time, plus the offset an operator set with set_taskpool_clock_offset().
Example:
  SELECT taskpool_now() - now();   -- the offset: 00:00:00 unless an operator moved the clock$$;

COMMENT ON FUNCTION taskpool_schema_version() IS $$The version of the SQL interface this database holds; workers check it at start-up.
Example:
  SELECT taskpool_schema_version();$$;

COMMENT ON FUNCTION tick_schedules() IS $$The tick: recovers stale tasks, then runs every due schedule once; pg_cron calls it each minute.
Example:
  SELECT tick_schedules();
  -- {"recovered": 0, "schedules": [{"schedule": "analytics_refresh", "tasks": 1, "error": null}]}$$;

COMMENT ON FUNCTION trigger_schedule(text) IS $$Runs one schedule now, enabled or not, without moving its next_run_at; returns the schedule.
Example:
  SELECT name, last_task_count FROM trigger_schedule('store_discovery');$$;

COMMENT ON FUNCTION unregister_task_waits(bigint[]) IS $$Ends the calling session's waits: for the tasks given, or all of them; returns how many ended.
Example:
  SELECT unregister_task_waits();              -- every wait of this session
  SELECT unregister_task_waits(ARRAY[42, 43]);$$;

COMMENT ON FUNCTION update_schedule(text, boolean, integer, integer) IS $$Enables or disables a schedule, or changes its interval or priority; returns it.
Example:
  SELECT name, enabled, next_run_at FROM update_schedule('analytics_refresh', interval_hours := 12);
  SELECT enabled FROM update_schedule('store_discovery', enabled := false);$$;

COMMENT ON FUNCTION worker_capacity(text) IS $$One role's capacity as JSON, in the shape an autoscaler reads (pending_tasks, active_workers, workers_needed).
Example:
  SELECT worker_capacity('product_resync');
  -- {"role": "product_resync", "pending_tasks": 500, "ready_tasks": 120, "active_workers": 3,
  --  "tasks_per_worker_hour": 50.0,
  --  "workers_needed": {"for_1_hour": 10, "for_4_hours": 3, "for_8_hours": 2}}$$;

COMMENT ON FUNCTION worker_wake_channel(text) IS $$The NOTIFY channel on which a worker is woken: one per worker id.
Example:
  SELECT worker_wake_channel('w1');  -- then LISTEN on it (quote it as an identifier)$$;

-- The states, not the edges between them: those are task_status_transitions' rows, and a copy
-- here drifted from them once (it missed pending -> running).
COMMENT ON COLUMN worker_tasks.status IS
    'What the task is doing. '
    'pending: in the pool (new, or back after a retry, snooze, release or stale recovery), ready once scheduled_for has passed. '
    'claimed: a worker took it (worker_id, attempt) and has not started it. '
    'running: a worker took it and started it (start_task, or claim_and_start_tasks). '
    'completed: it succeeded; result holds what the worker returned. '
    'failed: it failed for good: no retry left, not retryable, or its attempt counter spent; error_message says why. '
    'cancelled: an operator cancelled it (cancel_task): at once when pending, else when its attempt ended. '
    'A claimed or running task holds its store (one per dispensary_id); completed, failed and cancelled are finished '
    '(completed_at is set). Which status may follow which: the rows of task_status_transitions, checked on every '
    'change by tg_worker_tasks__enforce_transition.';

COMMIT;
