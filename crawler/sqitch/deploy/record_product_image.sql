-- Deploy taskpool_crawler:record_product_image to pg
-- requires: product_image_functions

-- record_product_image's home: its live body, unchanged from product_image_functions.
-- Change record_product_image here, with `sqitch rework record_product_image`.

BEGIN;
SET client_min_messages = 'warning';

-- record_product_image
-- Records an image the image_download handler stored at its content-addressed key, and links its URL to it.
CREATE OR REPLACE FUNCTION record_product_image(image_url text, sha256 text, storage_key text, size_bytes integer,
                                     content_type text)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT record_product_image('https://img.example/p-1.png',
--       '9f2c8d7e6b5a49382716f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0',
--       'images/9f/9f2c8d7e6b5a49382716f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0.png',
--       1234, 'image/png');
--   -- {"sha256": "9f2c…", "storage_key": "images/9f/9f2c….png", "new": true}
-- Idempotent per hash: the same content recorded again (another URL, a retried attempt) keeps
-- the first row, and new is false. The URL must be one link_product_images recorded. Bad
-- input: 22023, nothing written.
DECLARE
    v_sha256     text := lower(record_product_image.sha256);
    v_extension  text := CASE record_product_image.content_type
                             WHEN 'image/png' THEN 'png' WHEN 'image/jpeg' THEN 'jpg'
                             WHEN 'image/gif' THEN 'gif' END;
    v_new        boolean;
BEGIN
    IF v_sha256 IS NULL OR v_sha256 !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('sha256 must be 64 hex digits, not %s', coalesce(quote_literal(record_product_image.sha256), 'NULL'));
    END IF;
    IF v_extension IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('content_type must be image/png, image/jpeg or image/gif, not %s',
                             coalesce(quote_literal(record_product_image.content_type), 'NULL'));
    END IF;
    IF record_product_image.storage_key IS DISTINCT FROM
       format('images/%s/%s.%s', left(v_sha256, 2), v_sha256, v_extension) THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('storage_key must be %L (content-addressed), not %s',
                             format('images/%s/%s.%s', left(v_sha256, 2), v_sha256, v_extension),
                             coalesce(quote_literal(record_product_image.storage_key), 'NULL'));
    END IF;
    IF record_product_image.size_bytes IS NULL OR record_product_image.size_bytes <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('size_bytes must be positive, not %s', coalesce(record_product_image.size_bytes::text, 'NULL'));
    END IF;
    PERFORM FROM product_image_urls u WHERE u.image_url = record_product_image.image_url FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('image URL %s was never linked to a product (link_product_images records it)',
                             coalesce(quote_literal(left(record_product_image.image_url, 200)), 'NULL'));
    END IF;

    INSERT INTO product_images (sha256, storage_key, size_bytes, content_type)
    VALUES (v_sha256, record_product_image.storage_key, record_product_image.size_bytes, record_product_image.content_type)
    ON CONFLICT ON CONSTRAINT product_images_pkey DO NOTHING;
    v_new := FOUND;
    UPDATE product_image_urls u
    SET image_sha256 = v_sha256, last_downloaded_at = taskpool_now()
    WHERE u.image_url = record_product_image.image_url;
    RETURN (SELECT jsonb_build_object('sha256', i.sha256, 'storage_key', i.storage_key, 'new', v_new)
            FROM product_images i WHERE i.sha256 = v_sha256);
END;
$$;

COMMIT;
