-- Revert taskpool:platform_token_wait from pg

BEGIN;

DROP FUNCTION platform_token_wait(text);

COMMIT;
