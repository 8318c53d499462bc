-- Verify taskpool:platform_governance_requests_total on pg

BEGIN;

SELECT requests_total FROM platform_governance WHERE false;

ROLLBACK;
