-- Revert taskpool:task_roles_paused from pg

BEGIN;

ALTER TABLE task_roles
    DROP CONSTRAINT task_roles_pause_details_only_when_paused,
    DROP COLUMN pause_reason,
    DROP COLUMN paused_by,
    DROP COLUMN paused_at;

COMMIT;
