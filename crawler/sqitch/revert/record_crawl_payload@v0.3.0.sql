-- Revert taskpool:record_crawl_payload from pg

BEGIN;

DROP FUNCTION record_crawl_payload(integer, timestamptz, text, integer, text);

COMMIT;
