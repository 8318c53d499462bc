-- Revert taskpool_crawler:_proxy_label from pg

-- Nothing to undo: deploy/_proxy_label.sql redefined _proxy_label as proxy_label_masks_userinfo had left it.

BEGIN;
COMMIT;
