-- Revert taskpool:task_roles_claims_platform_token from pg

BEGIN;

ALTER TABLE task_roles DROP COLUMN claims_platform_token;

COMMIT;
