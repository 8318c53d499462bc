-- Verify taskpool:v_worker_capacity on pg

BEGIN;

SELECT role, pending_tasks, ready_tasks, running_tasks, active_workers, tasks_per_worker_hour,
       estimated_hours_to_drain, workers_needed_for_1_hour, workers_needed_for_4_hours,
       workers_needed_for_8_hours, oldest_ready_age, arrivals_last_hour, completed_last_hour,
       failed_attempts_last_hour, failure_rate, paused
FROM v_worker_capacity
WHERE FALSE;

ROLLBACK;
