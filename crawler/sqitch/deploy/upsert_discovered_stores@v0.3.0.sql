-- Deploy taskpool:upsert_discovered_stores to pg
-- requires: dispensaries_crawler_columns
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- upsert_discovered_stores
-- Adds the stores a platform lists that are new, updates the others, and returns the ids of the new ones.
CREATE FUNCTION upsert_discovered_stores(platform text, stores jsonb)
RETURNS integer[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT upsert_discovered_stores('simulated',
--       '[{"platform_store_id": "s-17", "name": "Green Leaf", "state": "CA", "city": "Oakland",
--          "menu_url": "http://127.0.0.1:8765/stores/s-17/menu"}]');
--   -- {42}: the ids of the stores that were new (store_discovery returns them as newStoreIds)
-- Stores are matched by (platform, platform_store_id). A new one is active, first seen now; a
-- known one gets the name, and the state, city and menu_url its object names (a field left out
-- keeps its value; null clears it); whether it is active is not touched. Every element is
-- checked first: a bad one raises 22023 naming it (stores[i], from 0) and nothing is written.
DECLARE
    c_fields constant text[] := ARRAY['platform_store_id', 'name', 'state', 'city', 'menu_url'];
    v_now    timestamptz := taskpool_now();
    v_bad    record;
    v_where  text;
    v_new    integer[];
BEGIN
    IF upsert_discovered_stores.platform IS NULL OR upsert_discovered_stores.stores IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'platform and stores are required';
    END IF;
    IF btrim(upsert_discovered_stores.platform) = '' OR length(upsert_discovered_stores.platform) > 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('platform must be a name of 1 to 100 characters, not %L',
                             left(upsert_discovered_stores.platform, 60));
    END IF;
    IF jsonb_typeof(upsert_discovered_stores.stores) <> 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('stores must be a JSON array of store objects, not %s',
                             jsonb_typeof(upsert_discovered_stores.stores));
    END IF;
    IF jsonb_array_length(upsert_discovered_stores.stores) > 10000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '54000',
            MESSAGE = format('stores has %s elements; at most 10000 go in one call',
                             jsonb_array_length(upsert_discovered_stores.stores));
    END IF;

    -- Every element is checked before anything is written; the first failing check of the first
    -- bad element is named.
    WITH
    -- each element with its platform id as text (NULL when missing or not a string or whole number)
    input AS (
        SELECT s.idx, s.store,
               CASE jsonb_typeof(s.store -> 'platform_store_id')
                   WHEN 'string' THEN s.store ->> 'platform_store_id'
                   WHEN 'number' THEN
                       CASE WHEN (s.store -> 'platform_store_id')::numeric
                                 = trunc((s.store -> 'platform_store_id')::numeric)
                            THEN trunc((s.store -> 'platform_store_id')::numeric)::text END
               END AS store_id,
               CASE WHEN jsonb_typeof(s.store -> 'menu_url') = 'string' THEN s.store ->> 'menu_url' END AS menu_url
        FROM jsonb_array_elements(upsert_discovered_stores.stores) WITH ORDINALITY AS s(store, idx)
    ),
    -- where a platform id or menu URL appears first in the array
    firsts AS (
        SELECT i.*,
               min(i.idx) OVER (PARTITION BY i.store_id) AS store_id_first,
               CASE WHEN i.menu_url IS NOT NULL THEN min(i.idx) OVER (PARTITION BY i.menu_url) END AS menu_url_first
        FROM input i
    )
    SELECT checked.* INTO v_bad
    FROM (
        SELECT f.idx, f.store, f.store_id_first, f.menu_url_first, owner.id AS menu_url_owner,
            CASE
                WHEN jsonb_typeof(f.store) <> 'object' THEN 'not_object'
                WHEN f.store - c_fields <> '{}'::jsonb THEN 'unknown_field'
                WHEN nullif(f.store -> 'platform_store_id', 'null') IS NULL THEN 'no_store_id'
                WHEN f.store_id IS NULL OR btrim(f.store_id) = '' OR length(f.store_id) > 255 THEN 'bad_store_id'
                WHEN nullif(f.store -> 'name', 'null') IS NULL THEN 'no_name'
                WHEN jsonb_typeof(f.store -> 'name') <> 'string' OR btrim(f.store ->> 'name') = '' THEN 'bad_name'
                WHEN jsonb_typeof(nullif(f.store -> 'state', 'null')) <> 'string'
                     OR (f.store ->> 'state') !~ '^[A-Z]{2}$' THEN 'bad_state'
                WHEN jsonb_typeof(nullif(f.store -> 'city', 'null')) <> 'string' THEN 'bad_city'
                WHEN jsonb_typeof(nullif(f.store -> 'menu_url', 'null')) <> 'string'
                     OR btrim(f.menu_url) = '' THEN 'bad_menu_url'
                WHEN f.store_id_first < f.idx THEN 'duplicate_store_id'
                WHEN f.menu_url_first < f.idx THEN 'duplicate_menu_url'
                WHEN owner.id IS NOT NULL THEN 'menu_url_taken'
            END AS problem
        FROM firsts f
        -- a store other than this one that has the menu URL already
        LEFT JOIN dispensaries owner
               ON owner.menu_url = f.menu_url
              AND (owner.platform, owner.platform_dispensary_id)
                  IS DISTINCT FROM (upsert_discovered_stores.platform, f.store_id)
    ) AS checked
    WHERE checked.problem IS NOT NULL
    ORDER BY checked.idx
    LIMIT 1;

    IF FOUND THEN
        v_where := format('stores[%s]: ', v_bad.idx - 1);
        CASE v_bad.problem
        WHEN 'not_object' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('a store must be a JSON object, not %s', jsonb_typeof(v_bad.store));
        WHEN 'unknown_field' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || (SELECT CASE WHEN count(*) = 1 THEN 'unknown field ' ELSE 'unknown fields ' END
                                             || string_agg(quote_literal(k), ', ' ORDER BY k)
                                      FROM jsonb_object_keys(v_bad.store - c_fields) AS k),
                HINT = 'Allowed fields: ' || array_to_string(c_fields, ', ') || '.';
        WHEN 'no_store_id' THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_where || 'platform_store_id is required';
        WHEN 'bad_store_id' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('platform_store_id must be a non-empty string (at most 255 characters) '
                                            'or a whole number, not %s', left((v_bad.store -> 'platform_store_id')::text, 60));
        WHEN 'no_name' THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = v_where || 'name is required';
        WHEN 'bad_name' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('name must be a non-empty string, not %s',
                                            left((v_bad.store -> 'name')::text, 60));
        WHEN 'bad_state' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('state must be a two-letter upper-case code, not %s',
                                            left((v_bad.store -> 'state')::text, 60)),
                HINT = 'For example "CA"; leave it out or null when unknown.';
        WHEN 'bad_city' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('city must be a string, not %s', left((v_bad.store -> 'city')::text, 60));
        WHEN 'bad_menu_url' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('menu_url must be a non-empty string, not %s',
                                            left((v_bad.store -> 'menu_url')::text, 60));
        WHEN 'duplicate_store_id' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('platform_store_id %s appears twice (also stores[%s])',
                                            left((v_bad.store -> 'platform_store_id')::text, 60), v_bad.store_id_first - 1);
        WHEN 'duplicate_menu_url' THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = v_where || format('menu_url %s appears twice (also stores[%s])',
                                            left((v_bad.store -> 'menu_url')::text, 200), v_bad.menu_url_first - 1);
        WHEN 'menu_url_taken' THEN
            RAISE EXCEPTION USING ERRCODE = '23505',
                MESSAGE = v_where || format('menu_url %s belongs to dispensary %s already',
                                            left((v_bad.store -> 'menu_url')::text, 200), v_bad.menu_url_owner),
                HINT = 'A menu has one store (dispensaries_one_per_menu_url).';
        END CASE;
    END IF;

    -- New stores. ON CONFLICT DO NOTHING waits for a rival discovery inserting the same store and
    -- then leaves it to the update below, so a store is new to exactly one caller.
    WITH
    input AS (
        SELECT s.idx, s.store,
               CASE jsonb_typeof(s.store -> 'platform_store_id')
                   WHEN 'string' THEN s.store ->> 'platform_store_id'
                   ELSE trunc((s.store -> 'platform_store_id')::numeric)::text
               END AS store_id
        FROM jsonb_array_elements(upsert_discovered_stores.stores) WITH ORDINALITY AS s(store, idx)
    ),
    inserted AS (
        INSERT INTO dispensaries (name, platform, platform_dispensary_id, state_code, city, menu_url, active,
                                  first_seen_at, created_at, updated_at)
        SELECT i.store ->> 'name', upsert_discovered_stores.platform, i.store_id, i.store ->> 'state',
               i.store ->> 'city', i.store ->> 'menu_url', true, v_now, v_now, v_now
        FROM input i
        ORDER BY i.idx
        ON CONFLICT ON CONSTRAINT dispensaries_one_per_platform_id DO NOTHING
        RETURNING id, platform_dispensary_id
    )
    SELECT coalesce(array_agg(n.id ORDER BY i.idx), '{}')
    INTO v_new
    FROM inserted n
    JOIN input i ON i.store_id = n.platform_dispensary_id;

    -- Known stores: what the platform says now, written only where it changed.
    UPDATE dispensaries d
    SET name = n.name, state_code = n.state_code, city = n.city, menu_url = n.menu_url, updated_at = v_now
    FROM (
        SELECT k.id,
               s.store ->> 'name' AS name,
               CASE WHEN s.store ? 'state' THEN s.store ->> 'state' ELSE k.state_code END AS state_code,
               CASE WHEN s.store ? 'city' THEN s.store ->> 'city' ELSE k.city END AS city,
               CASE WHEN s.store ? 'menu_url' THEN s.store ->> 'menu_url' ELSE k.menu_url END AS menu_url
        FROM jsonb_array_elements(upsert_discovered_stores.stores) AS s(store)
        JOIN dispensaries k
          ON k.platform = upsert_discovered_stores.platform
         AND k.platform_dispensary_id = CASE jsonb_typeof(s.store -> 'platform_store_id')
                                            WHEN 'string' THEN s.store ->> 'platform_store_id'
                                            ELSE trunc((s.store -> 'platform_store_id')::numeric)::text
                                        END
    ) AS n
    WHERE d.id = n.id
      AND NOT (d.id = ANY (v_new))
      AND (d.name, d.state_code, d.city, d.menu_url) IS DISTINCT FROM (n.name, n.state_code, n.city, n.menu_url);

    RETURN v_new;
END;
$$;

REVOKE ALL ON FUNCTION upsert_discovered_stores(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION upsert_discovered_stores(text, jsonb) TO taskpool_worker;

COMMIT;
