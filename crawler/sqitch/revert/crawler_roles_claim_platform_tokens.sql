-- Revert taskpool_crawler:crawler_roles_claim_platform_tokens from pg

BEGIN;

UPDATE task_roles SET claims_platform_token = false
WHERE role IN ('product_discovery', 'product_resync', 'image_download');

COMMIT;
