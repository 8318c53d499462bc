-- Revert taskpool_crawler:image_download_dedupe_key_private from pg

BEGIN;
SET client_min_messages = 'warning';

GRANT EXECUTE ON FUNCTION _image_download_dedupe_key(text) TO PUBLIC;

COMMIT;
