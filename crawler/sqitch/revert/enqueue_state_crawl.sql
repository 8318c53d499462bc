-- Revert taskpool_crawler:enqueue_state_crawl from pg

BEGIN;

DROP FUNCTION enqueue_state_crawl(text, text, boolean);

COMMIT;
