-- Revert taskpool:raw_crawl_payloads from pg

BEGIN;

DROP TABLE raw_crawl_payloads;

COMMIT;
