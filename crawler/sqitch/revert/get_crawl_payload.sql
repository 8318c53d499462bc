-- Revert taskpool:get_crawl_payload from pg

BEGIN;

DROP FUNCTION get_crawl_payload(bigint);

COMMIT;
