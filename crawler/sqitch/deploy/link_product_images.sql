-- Deploy taskpool_crawler:link_product_images to pg
-- requires: product_image_functions

-- link_product_images's home: its live body, unchanged from product_image_functions.
-- Change link_product_images here, with `sqitch rework link_product_images`.

BEGIN;
SET client_min_messages = 'warning';

-- link_product_images
-- Links an applied payload's products to their image URLs and queues one image_download per URL not stored yet.
CREATE OR REPLACE FUNCTION link_product_images(payload_id bigint, images jsonb)
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

COMMIT;
