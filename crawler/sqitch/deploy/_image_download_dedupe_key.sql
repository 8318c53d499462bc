-- Deploy taskpool_crawler:_image_download_dedupe_key to pg
-- requires: product_image_functions

-- _image_download_dedupe_key's home: its live body, unchanged from product_image_functions.
-- Change _image_download_dedupe_key here, with `sqitch rework _image_download_dedupe_key`.

BEGIN;
SET client_min_messages = 'warning';

-- _image_download_dedupe_key
-- The dedupe key of an image URL's image_download task (a hash: a URL may be 2048 characters).
CREATE OR REPLACE FUNCTION _image_download_dedupe_key(image_url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
STRICT
SET search_path = public, pg_temp
AS $$
    SELECT 'image_download:' || encode(sha256(convert_to(_image_download_dedupe_key.image_url, 'UTF8')), 'hex');
$$;

COMMIT;
