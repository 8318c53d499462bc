-- Verify taskpool_crawler:proxy_label_masks_userinfo on pg

BEGIN;

SELECT 1/(_proxy_label('http://TOKEN@127.0.0.1:3128') = 'http://***@127.0.0.1:3128')::integer;

ROLLBACK;
