-- Revert taskpool:platform_events from pg

BEGIN;

DROP TABLE platform_events;

COMMIT;
