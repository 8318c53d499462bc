-- Revert taskpool:disable_platform from pg

BEGIN;

DROP FUNCTION disable_platform(text, text);

COMMIT;
