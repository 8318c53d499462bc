-- Deploy taskpool:task_roles_paused to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- A paused role: its tasks are enqueued as ever but no claim hands one out until it is resumed.
ALTER TABLE task_roles
    ADD COLUMN paused_at    timestamptz,
    ADD COLUMN paused_by    text,
    ADD COLUMN pause_reason text,
    ADD CONSTRAINT task_roles_pause_details_only_when_paused
        CHECK (paused_at IS NOT NULL OR (paused_by IS NULL AND pause_reason IS NULL));

COMMENT ON COLUMN task_roles.paused_at IS
    'Set while the role is paused (pause_role, resume_role): no claim hands out its tasks; '
    'enqueues still land, and tasks already claimed or running finish.';
COMMENT ON COLUMN task_roles.paused_by IS
    'The database user whose session paused the role.';
COMMENT ON COLUMN task_roles.pause_reason IS
    'Why the role was paused, as the operator said (optional).';

COMMIT;
