-- Verify taskpool:platform_governance_enabled on pg

BEGIN;

SELECT enabled, disabled_at, disabled_by, disable_reason FROM platform_governance WHERE false;

ROLLBACK;
