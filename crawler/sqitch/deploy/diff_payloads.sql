-- Deploy taskpool:diff_payloads to pg
-- requires: crawl_payload_products

BEGIN;
SET client_min_messages = 'warning';

-- diff_payloads
-- What changed on a store's menu between two applied payloads: products added and removed, price and stock changes.
CREATE FUNCTION diff_payloads(from_payload_id bigint, to_payload_id bigint)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT jsonb_pretty(diff_payloads(123, 456));
--   -- {"from": {"id": 123, "fetchedAt": "...", "productCount": 100},
--   --  "to":   {"id": 456, "fetchedAt": "...", "productCount": 105},
--   --  "diff": {"added": 10, "removed": 5, "priceChanges": 8, "stockChanges": 12},
--   --  "details": {"added": [{"id", "name", "brand", "category", "price", "stock"}, ...],
--   --              "removed": [...], "priceChanges": [{"id", "name", "from", "to"}, ...],
--   --              "stockChanges": [{"id", "name", "from", "to"}, ...]}}
-- Products are matched by id; a change from or to an unknown (null) price or stock counts. The
-- details are in id order; a changed product's name is the one in the to payload. Both payloads
-- must be of one store (else 22023) and applied (else 55000); unknown payload: P0002.
DECLARE
    v_from raw_crawl_payloads;
    v_to   raw_crawl_payloads;
    v_diff jsonb;
BEGIN
    IF diff_payloads.from_payload_id IS NULL OR diff_payloads.to_payload_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'from_payload_id and to_payload_id are required';
    END IF;
    SELECT * INTO v_from FROM raw_crawl_payloads p WHERE p.id = diff_payloads.from_payload_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002', MESSAGE = format('payload %s does not exist', diff_payloads.from_payload_id);
    END IF;
    SELECT * INTO v_to FROM raw_crawl_payloads p WHERE p.id = diff_payloads.to_payload_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002', MESSAGE = format('payload %s does not exist', diff_payloads.to_payload_id);
    END IF;
    IF v_from.dispensary_id <> v_to.dispensary_id THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('payloads %s and %s are of different stores (dispensaries %s and %s)',
                             v_from.id, v_to.id, v_from.dispensary_id, v_to.dispensary_id),
            HINT = 'A diff compares two payloads of one store.';
    END IF;
    IF v_from.status <> 'applied' THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('payload %s is %s, not applied', v_from.id, v_from.status),
            HINT = 'Only applied payloads have products to compare (apply_menu_payload).';
    END IF;
    IF v_to.status <> 'applied' THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('payload %s is %s, not applied', v_to.id, v_to.status),
            HINT = 'Only applied payloads have products to compare (apply_menu_payload).';
    END IF;

    WITH
    -- every product of either payload, side by side
    pairs AS (
        SELECT coalesce(t.platform_product_id, f.platform_product_id) AS id,
               f.platform_product_id IS NOT NULL AS in_from,
               t.platform_product_id IS NOT NULL AS in_to,
               jsonb_build_object('id', f.platform_product_id, 'name', f.name, 'brand', f.brand,
                                  'category', f.category, 'price', f.price, 'stock', f.stock) AS from_product,
               jsonb_build_object('id', t.platform_product_id, 'name', t.name, 'brand', t.brand,
                                  'category', t.category, 'price', t.price, 'stock', t.stock) AS to_product,
               t.name, f.price AS from_price, t.price AS to_price, f.stock AS from_stock, t.stock AS to_stock
        FROM (SELECT * FROM crawl_payload_products c WHERE c.payload_id = v_from.id) AS f
        FULL JOIN (SELECT * FROM crawl_payload_products c WHERE c.payload_id = v_to.id) AS t
               ON t.platform_product_id = f.platform_product_id
    ),
    details AS (
        SELECT
            coalesce(jsonb_agg(p.to_product ORDER BY p.id) FILTER (WHERE p.in_to AND NOT p.in_from), '[]') AS added,
            coalesce(jsonb_agg(p.from_product ORDER BY p.id) FILTER (WHERE p.in_from AND NOT p.in_to), '[]') AS removed,
            coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'name', p.name, 'from', p.from_price, 'to', p.to_price)
                               ORDER BY p.id)
                     FILTER (WHERE p.in_from AND p.in_to AND p.from_price IS DISTINCT FROM p.to_price), '[]')
                AS price_changes,
            coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'name', p.name, 'from', p.from_stock, 'to', p.to_stock)
                               ORDER BY p.id)
                     FILTER (WHERE p.in_from AND p.in_to AND p.from_stock IS DISTINCT FROM p.to_stock), '[]')
                AS stock_changes
        FROM pairs p
    )
    SELECT jsonb_build_object(
               'from', jsonb_build_object('id', v_from.id, 'fetchedAt', v_from.fetched_at,
                                          'productCount', v_from.product_count),
               'to', jsonb_build_object('id', v_to.id, 'fetchedAt', v_to.fetched_at,
                                        'productCount', v_to.product_count),
               'diff', jsonb_build_object('added', jsonb_array_length(d.added),
                                          'removed', jsonb_array_length(d.removed),
                                          'priceChanges', jsonb_array_length(d.price_changes),
                                          'stockChanges', jsonb_array_length(d.stock_changes)),
               'details', jsonb_build_object('added', d.added, 'removed', d.removed,
                                             'priceChanges', d.price_changes, 'stockChanges', d.stock_changes))
    INTO v_diff
    FROM details d;
    RETURN v_diff;
END;
$$;

REVOKE ALL ON FUNCTION diff_payloads(bigint, bigint) FROM PUBLIC;

COMMIT;
