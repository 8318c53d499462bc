-- Revert taskpool_crawler:apply_menu_payload from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 body: every product needs its platform id, and there is no size.

-- apply_menu_payload
-- Applies a saved payload's parsed products: records them, updates the store's products and snapshots, marks it applied.
CREATE OR REPLACE FUNCTION apply_menu_payload(payload_id bigint, products jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT apply_menu_payload(9, '[{"id": "p-1", "name": "Blue Dream 3.5g", "brand": "Acme",
--                                   "category": "flower", "price": 35.00, "stock": 12}]');
--   -- {"products": 1, "added": 1, "updated": 0, "missing": 0, "snapshots": 1, "superseded_by": null}
-- products is the menu as product_refresh parsed it from the payload's file: objects with id
-- (string or whole number), name, and optional brand, category, price (0 to 99999999.99, two
-- decimals) and stock (whole, from 0). All of it happens in one transaction:
--   crawl_payload_products gets the products (what diff_payloads compares);
--   store_products: new products are added, known ones take the new details (updated counts
--     those whose name, brand, category, price or stock changed, or that were missing), and
--     the store's products absent from this payload go missing (missing counts those newly
--     missing; missing_since = this payload's fetched_at); a product seen again is missing no more;
--   store_product_snapshots gets one row per product, price, stock and UTC day not seen yet;
--   the payload becomes applied, with its product_count and this result.
-- A payload older than the store's newest applied one (by fetched_at, then id) only records
-- its products: store_products never move back, and superseded_by names the newer payload.
-- Applying an applied payload again with the same products returns the first result and writes
-- nothing; with other products it raises 55000. A bad element raises 22023 naming it
-- (products[i], from 0) and nothing is written. Unknown payload: P0002; corrupt payload: 55000.
DECLARE
    c_fields    constant text[] := ARRAY['id', 'name', 'brand', 'category', 'price', 'stock'];
    v_payload   raw_crawl_payloads;
    v_bad       jsonb;
    v_where     text;
    v_rows      crawl_payload_products[];
    v_count     integer;
    v_newer     bigint;
    v_added     integer := 0;
    v_updated   integer := 0;
    v_missing   integer := 0;
    v_snapshots integer := 0;
    v_result    jsonb;
BEGIN
    IF apply_menu_payload.payload_id IS NULL OR apply_menu_payload.products IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'payload_id and products are required';
    END IF;

    SELECT * INTO v_payload FROM raw_crawl_payloads p WHERE p.id = apply_menu_payload.payload_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002', MESSAGE = format('payload %s does not exist', apply_menu_payload.payload_id);
    END IF;
    -- One apply per store at a time: each reads the store's products and its newest applied
    -- payload, then writes them. The payload row lock is taken after, and read again under it.
    PERFORM pg_advisory_xact_lock(hashtext('taskpool.store_products'), v_payload.dispensary_id);
    SELECT * INTO v_payload FROM raw_crawl_payloads p WHERE p.id = apply_menu_payload.payload_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002', MESSAGE = format('payload %s does not exist', apply_menu_payload.payload_id);
    END IF;
    IF v_payload.status = 'corrupt' THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('payload %s is corrupt: %s', v_payload.id, left(v_payload.error_message, 200)),
            HINT = 'Its file is kept for inspection; the next crawl records a new payload.';
    END IF;

    IF jsonb_typeof(apply_menu_payload.products) <> 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('products must be a JSON array of product objects, not %s',
                             jsonb_typeof(apply_menu_payload.products));
    END IF;
    IF jsonb_array_length(apply_menu_payload.products) > 100000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '54000',
            MESSAGE = format('products has %s elements; a menu holds at most 100000',
                             jsonb_array_length(apply_menu_payload.products));
    END IF;

    -- Check and normalize every element in one pass: the first bad one, or all the rows.
    WITH
    -- each element with its id as text, its price and its stock (NULL when not of their type)
    parsed AS (
        SELECT s.idx, s.product,
               CASE jsonb_typeof(s.product -> 'id')
                   WHEN 'string' THEN s.product ->> 'id'
                   WHEN 'number' THEN
                       CASE WHEN (s.product -> 'id')::numeric = trunc((s.product -> 'id')::numeric)
                            THEN trunc((s.product -> 'id')::numeric)::text END
               END AS product_id,
               CASE WHEN jsonb_typeof(s.product -> 'price') = 'number'
                    THEN (s.product -> 'price')::numeric END AS price,
               _jsonb_integer(s.product -> 'stock') AS stock
        FROM jsonb_array_elements(apply_menu_payload.products) WITH ORDINALITY AS s(product, idx)
    ),
    -- where each id appears first
    firsts AS (
        SELECT p.*, min(p.idx) OVER (PARTITION BY p.product_id) AS id_first
        FROM parsed p
    ),
    checked AS (
        SELECT f.*,
            CASE
                WHEN jsonb_typeof(f.product) <> 'object' THEN 'not_object'
                WHEN f.product - c_fields <> '{}'::jsonb THEN 'unknown_field'
                WHEN nullif(f.product -> 'id', 'null') IS NULL THEN 'no_id'
                WHEN f.product_id IS NULL OR btrim(f.product_id) = '' OR length(f.product_id) > 255 THEN 'bad_id'
                WHEN nullif(f.product -> 'name', 'null') IS NULL THEN 'no_name'
                WHEN jsonb_typeof(f.product -> 'name') <> 'string' OR btrim(f.product ->> 'name') = '' THEN 'bad_name'
                WHEN jsonb_typeof(nullif(f.product -> 'brand', 'null')) <> 'string' THEN 'bad_brand'
                WHEN jsonb_typeof(nullif(f.product -> 'category', 'null')) <> 'string' THEN 'bad_category'
                WHEN jsonb_typeof(nullif(f.product -> 'price', 'null')) <> 'number'
                     OR f.price < 0 OR round(f.price, 2) > 99999999.99 THEN 'bad_price'
                WHEN nullif(f.product -> 'stock', 'null') IS NOT NULL
                     AND coalesce(f.stock < 0, true) THEN 'bad_stock'
                WHEN f.id_first < f.idx THEN 'duplicate_id'
            END AS problem
        FROM firsts f
    )
    SELECT (array_agg(jsonb_build_object('idx', c.idx, 'problem', c.problem, 'product', c.product,
                                         'id_first', c.id_first) ORDER BY c.idx)
                FILTER (WHERE c.problem IS NOT NULL))[1],
           coalesce(array_agg(CASE WHEN c.problem IS NULL THEN
                                  ROW(v_payload.id, c.product_id, c.product ->> 'name', c.product ->> 'brand',
                                      c.product ->> 'category', round(c.price, 2), c.stock)::crawl_payload_products
                              END ORDER BY c.idx) FILTER (WHERE c.problem IS NULL), '{}')
    INTO v_bad, v_rows
    FROM checked c;

    IF v_bad IS NOT NULL THEN
        v_where := format('products[%s]: ', (v_bad ->> 'idx')::integer - 1);
        CASE v_bad ->> 'problem'
        WHEN 'not_object' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('a product must be a JSON object, not %s', jsonb_typeof(v_bad -> 'product'));
        WHEN 'unknown_field' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || (SELECT CASE WHEN count(*) = 1 THEN 'unknown field ' ELSE 'unknown fields ' END
                                             || string_agg(quote_literal(k), ', ' ORDER BY k)
                                      FROM jsonb_object_keys((v_bad -> 'product') - c_fields) AS k),
                HINT = 'Allowed fields: ' || array_to_string(c_fields, ', ') || '.';
        WHEN 'no_id' THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_where || 'id is required';
        WHEN 'bad_id' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('id must be a non-empty string (at most 255 characters) or a whole '
                                            'number, not %s', left((v_bad #> '{product,id}')::text, 60));
        WHEN 'no_name' THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_where || 'name is required';
        WHEN 'bad_name' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('name must be a non-empty string, not %s',
                                            left((v_bad #> '{product,name}')::text, 60));
        WHEN 'bad_brand' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('brand must be a string or null, not %s',
                                            left((v_bad #> '{product,brand}')::text, 60));
        WHEN 'bad_category' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('category must be a string or null, not %s',
                                            left((v_bad #> '{product,category}')::text, 60));
        WHEN 'bad_price' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('price must be a number from 0 to 99999999.99 or null, not %s',
                                            left((v_bad #> '{product,price}')::text, 60));
        WHEN 'bad_stock' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('stock must be a whole number from 0 up or null, not %s',
                                            left((v_bad #> '{product,stock}')::text, 60));
        WHEN 'duplicate_id' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('id %s appears twice (also products[%s])',
                                            left((v_bad #> '{product,id}')::text, 60), (v_bad ->> 'id_first')::integer - 1);
        END CASE;
    END IF;
    v_count := cardinality(v_rows);

    -- Applied already: a retried call (same products) gets the first answer; anything else is
    -- a mistake, since the file behind a payload never changes (its sha256 is recorded).
    IF v_payload.status = 'applied' THEN
        IF EXISTS (SELECT * FROM unnest(v_rows)
                   EXCEPT
                   SELECT * FROM crawl_payload_products c WHERE c.payload_id = v_payload.id)
           OR v_count <> (SELECT count(*) FROM crawl_payload_products c WHERE c.payload_id = v_payload.id) THEN
            RAISE EXCEPTION USING
                ERRCODE = '55000',
                MESSAGE = format('payload %s was applied already, with other products', v_payload.id),
                HINT = 'A payload is applied once. Crawl the store again for a new payload.';
        END IF;
        RETURN v_payload.apply_result;
    END IF;

    INSERT INTO crawl_payload_products SELECT * FROM unnest(v_rows);

    -- The store's newest applied payload, if newer than this one: then store_products stay as they are.
    SELECT q.id INTO v_newer
    FROM raw_crawl_payloads q
    WHERE q.dispensary_id = v_payload.dispensary_id
      AND q.status = 'applied'
      AND (q.fetched_at, q.id) > (v_payload.fetched_at, v_payload.id)
    ORDER BY q.fetched_at DESC, q.id DESC
    LIMIT 1;

    IF v_newer IS NULL THEN
        -- Counted before the writes, against the products as they were.
        SELECT count(*) FILTER (WHERE sp.platform_product_id IS NULL),
               count(*) FILTER (WHERE sp.platform_product_id IS NOT NULL
                                  AND ((sp.name, sp.brand, sp.category, sp.price, sp.stock)
                                       IS DISTINCT FROM (c.name, c.brand, c.category, c.price, c.stock)
                                       OR sp.missing_since IS NOT NULL))
        INTO v_added, v_updated
        FROM crawl_payload_products c
        LEFT JOIN store_products sp
               ON sp.dispensary_id = v_payload.dispensary_id AND sp.platform_product_id = c.platform_product_id
        WHERE c.payload_id = v_payload.id;

        INSERT INTO store_products AS sp (dispensary_id, platform_product_id, name, brand, category, price, stock,
                                          first_seen_at, last_seen_at, missing_since, last_payload_id)
        SELECT v_payload.dispensary_id, c.platform_product_id, c.name, c.brand, c.category, c.price, c.stock,
               v_payload.fetched_at, v_payload.fetched_at, NULL, v_payload.id
        FROM crawl_payload_products c
        WHERE c.payload_id = v_payload.id
        ON CONFLICT (dispensary_id, platform_product_id) DO UPDATE
        SET name = excluded.name, brand = excluded.brand, category = excluded.category,
            price = excluded.price, stock = excluded.stock, last_seen_at = excluded.last_seen_at,
            missing_since = NULL, last_payload_id = excluded.last_payload_id;

        UPDATE store_products sp
        SET missing_since = v_payload.fetched_at
        WHERE sp.dispensary_id = v_payload.dispensary_id
          AND sp.missing_since IS NULL
          AND NOT EXISTS (SELECT FROM crawl_payload_products c
                          WHERE c.payload_id = v_payload.id AND c.platform_product_id = sp.platform_product_id);
        GET DIAGNOSTICS v_missing = ROW_COUNT;

        -- The dedupe key (see the column's comment) makes a repeat observation of the same
        -- UTC day a no-op, whichever payload brings it.
        INSERT INTO store_product_snapshots (dispensary_id, platform_product_id, price, stock, captured_at,
                                             payload_id, dedupe_key)
        SELECT v_payload.dispensary_id, c.platform_product_id, c.price, c.stock, v_payload.fetched_at, v_payload.id,
               encode(sha256(convert_to(concat_ws('|',
                   v_payload.dispensary_id,
                   replace(replace(c.platform_product_id, '\', '\\'), '|', '\|'),
                   coalesce(c.price::text, ''),
                   coalesce(c.stock::text, ''),
                   to_char(v_payload.fetched_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')), 'UTF8')), 'hex')
        FROM crawl_payload_products c
        WHERE c.payload_id = v_payload.id
        ORDER BY c.platform_product_id
        ON CONFLICT ON CONSTRAINT store_product_snapshots_one_per_dedupe_key DO NOTHING;
        GET DIAGNOSTICS v_snapshots = ROW_COUNT;
    END IF;

    v_result := jsonb_build_object('products', v_count, 'added', v_added, 'updated', v_updated,
                                   'missing', v_missing, 'snapshots', v_snapshots, 'superseded_by', v_newer);
    UPDATE raw_crawl_payloads p
    SET status = 'applied', product_count = v_count, applied_at = taskpool_now(), apply_result = v_result
    WHERE p.id = v_payload.id;
    RETURN v_result;
END;
$$;

COMMENT ON FUNCTION apply_menu_payload(bigint, jsonb) IS $$Applies a saved payload's parsed products: records them, updates the store's products and snapshots, marks it applied.
Example:
  SELECT apply_menu_payload(9, '[{"id": "p-1", "name": "Blue Dream 3.5g", "brand": "Acme",
                                  "category": "flower", "price": 35.00, "stock": 12}]');
  -- {"products": 1, "added": 1, "updated": 0, "missing": 0, "snapshots": 1, "superseded_by": null}$$;

COMMIT;
