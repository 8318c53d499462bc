-- Revert taskpool_crawler:_prune_policy_product_images from pg

BEGIN;

DELETE FROM retention_policies WHERE name = 'product_images';
DROP FUNCTION _prune_policy_product_images(retention_policies, integer, boolean);

COMMIT;
