-- Revert taskpool:_cron_parse from pg

-- Nothing to undo: deploy/_cron_parse.sql redefined _cron_parse as cron_next_run had left it.

BEGIN;
COMMIT;
