-- Verify taskpool:task_roles_paused on pg

BEGIN;

SELECT paused_at, paused_by, pause_reason FROM task_roles WHERE false;

ROLLBACK;
