-- Verify taskpool:_platform_clock on pg

BEGIN;

SELECT 1 / (_platform_clock() >= now())::integer;

ROLLBACK;
