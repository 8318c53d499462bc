-- Revert taskpool:cron_next_run from pg

BEGIN;

DROP FUNCTION cron_next_run(text, timestamptz, text);
DROP FUNCTION _cron_parse(text);
DROP FUNCTION _cron_field(text, text, integer, integer, text[]);

COMMIT;
