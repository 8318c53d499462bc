-- Revert taskpool:enable_platform from pg

BEGIN;

DROP FUNCTION enable_platform(text);

COMMIT;
