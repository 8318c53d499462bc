-- Revert taskpool:worker_wake_channel from pg

BEGIN;

DROP FUNCTION worker_wake_channel(text);

COMMIT;
