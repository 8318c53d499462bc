-- Verify taskpool:v_worker_capacity_units on pg

BEGIN;

SELECT role, active_workers, estimated_hours_to_drain, workers_needed_for_1_hour, active_processes,
       active_slots, slots_per_process, tasks_per_slot_hour, slots_needed_for_1_hour,
       slots_needed_for_4_hours, slots_needed_for_8_hours, processes_needed_for_1_hour,
       processes_needed_for_4_hours, processes_needed_for_8_hours
FROM v_worker_capacity
WHERE FALSE;

ROLLBACK;
