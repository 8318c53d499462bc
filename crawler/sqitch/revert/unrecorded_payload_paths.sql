-- Revert taskpool_crawler:unrecorded_payload_paths from pg

BEGIN;

DROP FUNCTION unrecorded_payload_paths(text[]);

COMMIT;
