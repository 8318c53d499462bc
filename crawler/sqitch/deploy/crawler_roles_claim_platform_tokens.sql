-- Deploy taskpool_crawler:crawler_roles_claim_platform_tokens to pg
-- requires: crawler_roles
-- requires: product_images
-- requires: taskpool:task_roles_claims_platform_token

BEGIN;
SET client_min_messages = 'warning';

-- Each task of these roles makes exactly one request to its platform (task.platform): a menu
-- (fetch_and_save) or an image (download_image). Their claim takes the request's token, so a
-- claimed task never waits for the rate limit and its handler sends at once
-- (taskpool_crawler.handlers.CLAIMS_PLATFORM_TOKEN names the same roles). The other roles read
-- no platform (product_refresh, analytics_refresh, ...) or make several requests or none
-- (store_discovery, entry_point_discovery): they take their tokens at each request,
-- reserve_platform_request.
UPDATE task_roles SET claims_platform_token = true
WHERE role IN ('product_discovery', 'product_resync', 'image_download');

COMMIT;
