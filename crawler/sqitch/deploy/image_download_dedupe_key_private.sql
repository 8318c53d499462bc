-- Deploy taskpool_crawler:image_download_dedupe_key_private to pg
-- requires: product_image_functions

BEGIN;
SET client_min_messages = 'warning';

-- CREATE FUNCTION lets PUBLIC execute the function: _image_download_dedupe_key was left so.
-- Nothing of the schema is executable by PUBLIC (crawler/sql_tests/63_nothing_public.sql);
-- link_product_images, which calls it, runs as its owner.
REVOKE ALL ON FUNCTION _image_download_dedupe_key(text) FROM PUBLIC;

COMMIT;
