-- stores_view: v_stores, each store's payloads by status, its last fetch and its menu's size
-- (the dashboard's stores page).
BEGIN;
SELECT plan(3);

SELECT has_view('v_stores', 'Should have view v_stores');

INSERT INTO dispensaries (name, platform, state_code, city) VALUES ('t49 Crawled', 't49', 'CA', 'Oakland'), ('t49 New', 't49', NULL, NULL);
SELECT id AS crawled FROM dispensaries WHERE name = 't49 Crawled' \gset
-- pg_temp.saved: a payload of the store fetched at the time, under the path the crawler gives it.
CREATE FUNCTION pg_temp.saved(store_id integer, fetched_at timestamptz)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT record_crawl_payload(saved.store_id, saved.fetched_at,
        format('payloads/%s/store_%s_%sZ.json.gz', to_char(saved.fetched_at AT TIME ZONE 'UTC', 'YYYY/MM/DD'),
               saved.store_id, to_char(saved.fetched_at AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS')),
        100, encode(sha256(convert_to(saved.fetched_at::text, 'UTF8')), 'hex'));
$$;
SELECT pg_temp.saved(:crawled, now() - interval '2 hours') AS first \gset
SELECT pg_temp.saved(:crawled, now() - interval '1 hour') AS second \gset
SELECT pg_temp.saved(:crawled, now()) AS third \gset
SELECT apply_menu_payload(:first, '[{"id": "a", "name": "A"}, {"id": "b", "name": "B"}]');
SELECT apply_menu_payload(:second, '[{"id": "a", "name": "A"}]');
SELECT mark_payload_corrupt(:third, 'not gzip');

SELECT results_eq(
    $$SELECT name, state_code, payloads, applied_payloads, corrupt_payloads, last_fetched_at, products, missing_products
      FROM v_stores WHERE platform = 't49' ORDER BY id$$,
    $$VALUES ('t49 Crawled'::text, 'CA'::text, 3::bigint, 2::bigint, 1::bigint, now(), 1::bigint, 1::bigint),
             ('t49 New', NULL, 0, 0, 0, NULL, 0, 0)$$,
    'Should count a store''s payloads by status, its last fetch, its products on the menu and gone missing');
SELECT is((SELECT count(*) FROM v_stores), (SELECT count(*) FROM dispensaries),
    'Should give every store a row, with payloads or without');

SELECT * FROM finish();
ROLLBACK;
