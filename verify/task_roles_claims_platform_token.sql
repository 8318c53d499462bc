-- Verify taskpool:task_roles_claims_platform_token on pg

BEGIN;

SELECT claims_platform_token FROM task_roles WHERE false;

ROLLBACK;
