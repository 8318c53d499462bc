-- Revert taskpool:record_platform_result from pg

BEGIN;

DROP FUNCTION record_platform_result(text, boolean, text);

COMMIT;
