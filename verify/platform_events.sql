-- Verify taskpool:platform_events on pg

BEGIN;

SELECT id, platform, event, at, consecutive_failures, error_message FROM platform_events WHERE FALSE;

ROLLBACK;
