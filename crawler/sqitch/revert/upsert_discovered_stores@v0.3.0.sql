-- Revert taskpool:upsert_discovered_stores from pg

BEGIN;

DROP FUNCTION upsert_discovered_stores(text, jsonb);

COMMIT;
