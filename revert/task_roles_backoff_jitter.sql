-- Revert taskpool:task_roles_backoff_jitter from pg

BEGIN;

ALTER TABLE task_roles
    DROP COLUMN backoff_multiplier,
    DROP COLUMN backoff_jitter;

COMMENT ON COLUMN task_roles.backoff_base IS
    'Delay before the first retry; each further retry doubles it, up to backoff_cap.';

COMMIT;
