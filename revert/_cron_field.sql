-- Revert taskpool:_cron_field from pg

-- Nothing to undo: deploy/_cron_field.sql redefined _cron_field as cron_next_run had left it.

BEGIN;
COMMIT;
