-- Verify taskpool:task_throughput on pg

BEGIN;

SELECT hour, role, completed, failed_attempts FROM task_throughput(1);

ROLLBACK;
