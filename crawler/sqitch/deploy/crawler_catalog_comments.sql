-- Deploy taskpool:crawler_catalog_comments to pg
-- requires: add_store
-- requires: apply_menu_payload
-- requires: diff_latest_payloads
-- requires: diff_payloads
-- requires: generate_resync_plan
-- requires: generate_resync_tasks
-- requires: get_crawl_payload
-- requires: get_dispensary
-- requires: mark_payload_corrupt
-- requires: record_crawl_payload
-- requires: refresh_analytics
-- requires: set_store_platform_id
-- requires: upsert_discovered_stores

BEGIN;
SET client_min_messages = 'warning';

-- crawler_catalog_comments
-- Comments every public function of the crawler (its store data, payloads, products, analytics,
-- discovery, resync planning) with its header sentence and an example, as catalog_comments does
-- for the queue core's.

COMMENT ON FUNCTION add_store(text, text, text, text, text) IS $$Adds a store by hand, active from now on; returns its row, so its id is what tasks name as dispensary_id.
Example:
  SELECT id FROM add_store('Green Leaf', platform := 'dutchie', state_code := 'CA');$$;

COMMENT ON FUNCTION apply_menu_payload(bigint, jsonb) IS $$Applies a saved payload's parsed products: records them, updates the store's products and snapshots, marks it applied.
Example:
  SELECT apply_menu_payload(9, '[{"id": "p-1", "name": "Blue Dream 3.5g", "brand": "Acme",
                                  "category": "flower", "price": 35.00, "stock": 12}]');
  -- {"products": 1, "added": 1, "updated": 0, "missing": 0, "snapshots": 1, "superseded_by": null}$$;

COMMENT ON FUNCTION diff_latest_payloads(integer) IS $$The diff between a store's two newest applied payloads (by fetched_at): what its last crawl changed.
Example:
  SELECT diff_latest_payloads(42) -> 'diff';
  -- {"added": 1, "removed": 0, "priceChanges": 3, "stockChanges": 7}$$;

COMMENT ON FUNCTION diff_payloads(bigint, bigint) IS $$What changed on a store's menu between two applied payloads: products added and removed, price and stock changes.
Example:
  SELECT diff_payloads(123, 456) -> 'diff';
  -- {"added": 10, "removed": 5, "priceChanges": 8, "stockChanges": 12}$$;

COMMENT ON FUNCTION generate_resync_plan(integer, date, text, integer) IS $$Plans a day of product_resync as generate_resync_tasks does, and says how many active stores it skipped, and why.
Example:
  SELECT * FROM generate_resync_plan(6, CURRENT_DATE);
  --  created | already_planned | resync_under_way
  --        0 |             298 |                2$$;

COMMENT ON FUNCTION generate_resync_tasks(integer, date, text, integer) IS $$Plans a day of product_resync: one task per active store, stores split evenly in id order over `batches` slots.
Example:
  SELECT generate_resync_tasks(6, CURRENT_DATE);          -- 00:00, 04:00, ..., 20:00
  SELECT generate_resync_tasks(6, '2026-03-08', 'America/New_York');$$;

COMMENT ON FUNCTION get_crawl_payload(bigint) IS $$One payload's row: product_refresh reads where its file lies and its checksum (workers cannot read the table).
Example:
  SELECT dispensary_id, storage_path, sha256, status FROM get_crawl_payload(9);$$;

COMMENT ON FUNCTION get_dispensary(integer) IS $$One store's row: the crawl handlers read its platform id and menu URL (workers cannot read the table).
Example:
  SELECT platform, platform_dispensary_id, menu_url, active FROM get_dispensary(42);$$;

COMMENT ON FUNCTION mark_payload_corrupt(bigint, text) IS $$Marks a saved payload whose file cannot be parsed as corrupt, keeping the error; the file stays for inspection.
Example:
  SELECT mark_payload_corrupt(9, 'gzip: unexpected end of file');$$;

COMMENT ON FUNCTION record_crawl_payload(integer, timestamptz, text, integer, text) IS $$Records a menu payload saved to disk (status saved) and returns its id; the store's last_crawled_at moves on.
Example:
  SELECT record_crawl_payload(42, '2026-03-01T08:00:00Z',
      'payloads/2026/03/01/store_42_20260301T080000Z.json.gz', 18234, '9f86d0...0f00a08');$$;

COMMENT ON FUNCTION refresh_analytics() IS $$Refreshes the analytics materialized views and returns how many rows each holds; analytics_refresh calls it.
Example:
  SELECT refresh_analytics();
  -- {"mv_store_freshness": 120, "mv_store_category_prices": 845}$$;

COMMENT ON FUNCTION set_store_platform_id(integer, text) IS $$Records the id on its platform of a store known by its menu URL; entry_point_discovery calls it.
Example:
  SELECT id, platform, platform_dispensary_id FROM set_store_platform_id(42, '5f1c0a9e77d2b34c1e0a9f12');$$;

COMMENT ON FUNCTION upsert_discovered_stores(text, jsonb) IS $$Adds the stores a platform lists that are new, updates the others, and returns the ids of those awaiting their first crawl: the new ones, and known ones never crawled with none queued.
Example:
  SELECT upsert_discovered_stores('simulated',
      '[{"platform_store_id": "s-17", "name": "Green Leaf", "state": "CA", "city": "Oakland",
         "menu_url": "http://127.0.0.1:8765/stores/s-17/menu"}]');
  -- {42}: the stores awaiting their first crawl (store_discovery returns them as newStoreIds)$$;

COMMIT;
