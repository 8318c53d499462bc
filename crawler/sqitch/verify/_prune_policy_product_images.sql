-- Verify taskpool_crawler:_prune_policy_product_images on pg

BEGIN;

SELECT '_prune_policy_product_images(retention_policies, integer, boolean)'::regprocedure;
SELECT 1 / count(*) FROM retention_policies WHERE name = 'product_images';

ROLLBACK;
