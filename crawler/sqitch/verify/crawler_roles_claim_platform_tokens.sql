-- Verify taskpool_crawler:crawler_roles_claim_platform_tokens on pg

BEGIN;

SELECT 1 / (count(*) = 3)::integer FROM task_roles
WHERE role IN ('product_discovery', 'product_resync', 'image_download') AND claims_platform_token;

ROLLBACK;
