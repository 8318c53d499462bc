-- Deploy taskpool_crawler:record_image_download_failure to pg
-- requires: product_image_functions

-- record_image_download_failure's home: its live body, unchanged from product_image_functions.
-- Change record_image_download_failure here, with `sqitch rework record_image_download_failure`.

BEGIN;
SET client_min_messages = 'warning';

-- record_image_download_failure
-- Records that downloading an image URL failed (what the image_download attempt said).
CREATE OR REPLACE FUNCTION record_image_download_failure(image_url text, error_message text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT record_image_download_failure('https://img.example/p-1.png', 'HTTP 404: no such image');
-- link_product_images queues no download of the URL for a day after. An unknown URL: 22023.
BEGIN
    UPDATE product_image_urls u
    SET last_failed_at = taskpool_now(),
        last_error = left(coalesce(record_image_download_failure.error_message, 'unknown error'), 2000)
    WHERE u.image_url = record_image_download_failure.image_url;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('image URL %s was never linked to a product (link_product_images records it)',
                             coalesce(quote_literal(left(record_image_download_failure.image_url, 200)), 'NULL'));
    END IF;
END;
$$;

COMMIT;
