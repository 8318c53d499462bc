-- Deploy taskpool_crawler:product_image_functions to pg
-- requires: product_images
-- requires: raw_crawl_payloads
-- requires: taskpool:enqueue_task
-- requires: taskpool:taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- link_product_images
-- Links an applied payload's products to their image URLs and queues one image_download per URL not stored yet.
CREATE FUNCTION link_product_images(payload_id bigint, images jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT link_product_images(9, '[{"id": "p-1", "image_url": "https://img.example/p-1.png"},
--                                   {"id": "p-2", "image_url": null}]');
--   -- {"linked": 1, "unlinked": 0, "queued": 1, "stored": 0, "superseded": 0}
-- The product_refresh handler calls it after apply_menu_payload with every product of the
-- menu: its id (as apply_menu_payload took it) and its image_url (null: no image). Only the
-- products whose newest applied payload is this one are linked (a payload applied out of order
-- moves no link back: superseded counts the others); a null image_url unlinks the product.
-- Each URL linked that has no stored image gets one image_download task, deduplicated against
-- the URL's active task (its dedupe key), on the store's platform; a URL whose last download
-- failed less than a day ago gets none (a broken image is not fetched every refresh); a URL
-- already stored is linked without a download (stored counts those). Bad input: 22023, nothing
-- written. Unknown payload: P0002.
DECLARE
    v_payload     raw_crawl_payloads;
    v_platform    text;
    v_bad         text;
    v_linked      integer;
    v_unlinked    integer;
    v_superseded  integer;
    v_queued      integer := 0;
    v_stored      integer;
    v_url         text;
BEGIN
    IF link_product_images.payload_id IS NULL OR link_product_images.images IS NULL
       OR jsonb_typeof(link_product_images.images) <> 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('link_product_images needs a payload id and a JSON array of {"id", "image_url"}, not %s and %s',
                             coalesce(link_product_images.payload_id::text, 'NULL'),
                             coalesce(left(link_product_images.images::text, 60), 'NULL'));
    END IF;
    SELECT * INTO v_payload FROM raw_crawl_payloads p WHERE p.id = link_product_images.payload_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002', MESSAGE = format('payload %s does not exist', link_product_images.payload_id);
    END IF;
    SELECT d.platform INTO v_platform FROM dispensaries d WHERE d.id = v_payload.dispensary_id;

    -- The first bad element, named as apply_menu_payload names them (images[i], from 0).
    SELECT format('images[%s]: %s', e.n - 1, CASE
               WHEN jsonb_typeof(e.item) <> 'object' THEN 'must be an object {"id", "image_url"}'
               WHEN e.item - ARRAY['id', 'image_url'] <> '{}'::jsonb THEN 'has fields other than id and image_url'
               WHEN jsonb_typeof(e.item -> 'id') NOT IN ('string', 'number')
                    OR btrim(e.item ->> 'id') = '' THEN 'id must be a non-empty string or a number'
               WHEN NOT e.item ? 'image_url' THEN 'image_url is missing (null for no image)'
               WHEN jsonb_typeof(e.item -> 'image_url') NOT IN ('string', 'null') THEN 'image_url must be a string or null'
               ELSE format('image_url %s is not an http(s) URL of at most 2048 characters', left(e.item ->> 'image_url', 80))
           END)
    INTO v_bad
    FROM jsonb_array_elements(link_product_images.images) WITH ORDINALITY AS e(item, n)
    WHERE jsonb_typeof(e.item) <> 'object'
       OR e.item - ARRAY['id', 'image_url'] <> '{}'::jsonb
       OR jsonb_typeof(e.item -> 'id') NOT IN ('string', 'number')
       OR btrim(e.item ->> 'id') = ''
       OR NOT e.item ? 'image_url'
       OR (jsonb_typeof(e.item -> 'image_url') = 'string'
           AND NOT (e.item ->> 'image_url' ~ '^https?://[^/[:space:]]+[^[:space:]]*$' AND length(e.item ->> 'image_url') <= 2048))
       OR jsonb_typeof(e.item -> 'image_url') NOT IN ('string', 'null')
    ORDER BY e.n
    LIMIT 1;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_bad;
    END IF;
    SELECT format('images: id %s appears twice', i.id) INTO v_bad
    FROM (SELECT e.item ->> 'id' AS id FROM jsonb_array_elements(link_product_images.images) AS e(item)) i
    GROUP BY i.id HAVING count(*) > 1
    LIMIT 1;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_bad;
    END IF;

    -- The elements as rows, for the statements below (dropped at commit; emptied when a
    -- transaction links twice).
    IF to_regclass('pg_temp._linking') IS NULL THEN
        CREATE TEMP TABLE _linking (
            platform_product_id text PRIMARY KEY,
            image_url           text,
            current             boolean
        ) ON COMMIT DROP;
    ELSE
        TRUNCATE _linking;
    END IF;
    INSERT INTO _linking
    SELECT e.item ->> 'id', e.item ->> 'image_url',
           EXISTS (SELECT FROM store_products sp
                   WHERE sp.dispensary_id = v_payload.dispensary_id
                     AND sp.platform_product_id = e.item ->> 'id'
                     AND sp.last_payload_id = v_payload.id)
    FROM jsonb_array_elements(link_product_images.images) AS e(item);
    SELECT count(*) INTO v_superseded FROM _linking l WHERE NOT l.current;

    INSERT INTO product_image_urls (image_url, platform)
    SELECT DISTINCT l.image_url, v_platform FROM _linking l
    WHERE l.current AND l.image_url IS NOT NULL
    ORDER BY 1
    ON CONFLICT (image_url) DO NOTHING;

    WITH linked AS (
        INSERT INTO store_product_images AS spi (dispensary_id, platform_product_id, image_url)
        SELECT v_payload.dispensary_id, l.platform_product_id, l.image_url
        FROM _linking l
        WHERE l.current AND l.image_url IS NOT NULL
        ORDER BY l.platform_product_id
        ON CONFLICT (dispensary_id, platform_product_id) DO UPDATE
            SET image_url = excluded.image_url, linked_at = taskpool_now()
            WHERE spi.image_url IS DISTINCT FROM excluded.image_url
        RETURNING 1
    )
    SELECT count(*) INTO v_linked FROM linked;
    WITH unlinked AS (
        DELETE FROM store_product_images spi
        USING _linking l
        WHERE l.current AND l.image_url IS NULL
          AND spi.dispensary_id = v_payload.dispensary_id
          AND spi.platform_product_id = l.platform_product_id
        RETURNING 1
    )
    SELECT count(*) INTO v_unlinked FROM unlinked;

    SELECT count(DISTINCT u.image_url) INTO v_stored
    FROM _linking l JOIN product_image_urls u ON u.image_url = l.image_url
    WHERE l.current AND u.image_sha256 IS NOT NULL;

    FOR v_url IN
        SELECT DISTINCT u.image_url
        FROM _linking l JOIN product_image_urls u ON u.image_url = l.image_url
        WHERE l.current AND u.image_sha256 IS NULL
          AND (u.last_failed_at IS NULL OR u.last_failed_at < taskpool_now() - interval '1 day')
          AND NOT EXISTS (SELECT FROM worker_tasks t
                          WHERE t.dedupe_key = _image_download_dedupe_key(u.image_url)
                            AND t.status IN ('pending', 'claimed', 'running'))
        ORDER BY 1
    LOOP
        PERFORM enqueue_task('image_download', jsonb_build_object('image_url', v_url),
                             platform := u.platform,
                             dedupe_key := _image_download_dedupe_key(v_url))
        FROM product_image_urls u WHERE u.image_url = v_url;
        v_queued := v_queued + 1;
    END LOOP;

    RETURN jsonb_build_object('linked', v_linked, 'unlinked', v_unlinked, 'queued', v_queued,
                              'stored', v_stored, 'superseded', v_superseded);
END;
$$;

-- _image_download_dedupe_key
-- The dedupe key of an image URL's image_download task (a hash: a URL may be 2048 characters).
CREATE FUNCTION _image_download_dedupe_key(image_url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
STRICT
SET search_path = public, pg_temp
AS $$
    SELECT 'image_download:' || encode(sha256(convert_to(_image_download_dedupe_key.image_url, 'UTF8')), 'hex');
$$;

-- record_product_image
-- Records an image the image_download handler stored at its content-addressed key, and links its URL to it.
CREATE FUNCTION record_product_image(image_url text, sha256 text, storage_key text, size_bytes integer,
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

-- record_image_download_failure
-- Records that downloading an image URL failed (what the image_download attempt said).
CREATE FUNCTION record_image_download_failure(image_url text, error_message text)
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

COMMENT ON FUNCTION link_product_images(bigint, jsonb) IS $$Links an applied payload's products to their image URLs and queues one image_download per URL not stored yet.
Example:
  SELECT link_product_images(9, '[{"id": "p-1", "image_url": "https://img.example/p-1.png"}, {"id": "p-2", "image_url": null}]');$$;
COMMENT ON FUNCTION _image_download_dedupe_key(text) IS $$The dedupe key of an image URL's image_download task (a hash: a URL may be 2048 characters).
Example:
  SELECT _image_download_dedupe_key('https://img.example/p-1.png');$$;
COMMENT ON FUNCTION record_product_image(text, text, text, integer, text) IS $$Records an image the image_download handler stored at its content-addressed key, and links its URL to it; idempotent per hash.
Example:
  SELECT record_product_image('https://img.example/p-1.png', '9f2c8d7e6b5a49382716f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0', 'images/9f/9f2c8d7e6b5a49382716f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0.png', 1234, 'image/png');$$;
COMMENT ON FUNCTION record_image_download_failure(text, text) IS $$Records that downloading an image URL failed (what the image_download attempt said).
Example:
  SELECT record_image_download_failure('https://img.example/p-1.png', 'HTTP 404: no such image');$$;

REVOKE ALL ON FUNCTION link_product_images(bigint, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION record_product_image(text, text, text, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION record_image_download_failure(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION link_product_images(bigint, jsonb) TO taskpool_worker;
GRANT EXECUTE ON FUNCTION record_product_image(text, text, text, integer, text) TO taskpool_worker;
GRANT EXECUTE ON FUNCTION record_image_download_failure(text, text) TO taskpool_worker;

COMMIT;
