-- Deploy taskpool:add_store to pg
-- requires: dispensaries_crawler_columns

BEGIN;
SET client_min_messages = 'warning';

-- add_store
-- Adds a store by hand, active from now on; returns its row, so its id is what tasks name as dispensary_id.
CREATE FUNCTION add_store(
    name       text,
    platform   text DEFAULT NULL,
    state_code text DEFAULT NULL,
    city       text DEFAULT NULL,
    menu_url   text DEFAULT NULL)
RETURNS dispensaries
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT id FROM add_store('Green Leaf', platform := 'dutchie', state_code := 'CA');
--   SELECT enqueue_task('product_resync', dispensary_id := <that id>);
-- For operators (not granted to taskpool_worker); store discovery adds the crawler's stores with
-- upsert_discovered_stores instead. A store known only by its menu URL (menu_url, no platform id)
-- is what entry_point_discovery resolves. Each bad value is 22023 naming it, a menu URL another
-- store has is 23505 naming that store; nothing is written then.
DECLARE
    v_owner integer;
    v_store dispensaries;
BEGIN
    IF add_store.name IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'name is required';
    END IF;
    IF btrim(add_store.name) = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('name must not be blank, not %L', add_store.name);
    END IF;
    IF btrim(add_store.platform) = '' OR length(add_store.platform) > 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('platform must be a name of 1 to 100 characters, not %L', left(add_store.platform, 60));
    END IF;
    IF add_store.state_code !~ '^[A-Z]{2}$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('state_code must be two capital letters, not %L', left(add_store.state_code, 60)),
            HINT = 'A US state''s code, such as ''CA''.';
    END IF;
    IF btrim(add_store.menu_url) = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('menu_url must not be blank, not %L', add_store.menu_url);
    END IF;

    SELECT d.id INTO v_owner FROM dispensaries d WHERE d.menu_url = add_store.menu_url;
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '23505',
            MESSAGE = format('menu_url %L is dispensary %s already', add_store.menu_url, v_owner),
            HINT = 'One store per menu: add_store would make a second row for that store.';
    END IF;

    INSERT INTO dispensaries (name, platform, state_code, city, menu_url)
    VALUES (add_store.name, add_store.platform, add_store.state_code, add_store.city, add_store.menu_url)
    RETURNING * INTO v_store;
    RETURN v_store;
END;
$$;

COMMENT ON FUNCTION add_store(text, text, text, text, text) IS
    'Adds a store by hand, active from now on; returns its row, so its id is what tasks name as dispensary_id.';

REVOKE ALL ON FUNCTION add_store(text, text, text, text, text) FROM PUBLIC;

COMMIT;
