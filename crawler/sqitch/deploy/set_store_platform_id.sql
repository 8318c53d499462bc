-- Deploy taskpool:set_store_platform_id to pg
-- requires: dispensaries_crawler_columns
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- set_store_platform_id
-- Records the id on its platform of a store known by its menu URL; entry_point_discovery calls it.
CREATE FUNCTION set_store_platform_id(dispensary_id integer, platform_dispensary_id text)
RETURNS dispensaries
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT id, platform, platform_dispensary_id FROM set_store_platform_id(42, '5f1c0a9e77d2b34c1e0a9f12');
-- The store must have a platform (22023 otherwise) and no platform id yet, or this one: setting
-- the same id again returns the row unchanged (a retried call), another id is 55000 (the id is
-- the key store discovery matches on; change it by hand if the platform really renumbered).
-- An id another store of the platform has is 23505; unknown store: P0002.
DECLARE
    v_store dispensaries;
    v_owner integer;
BEGIN
    IF set_store_platform_id.dispensary_id IS NULL OR set_store_platform_id.platform_dispensary_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'dispensary_id and platform_dispensary_id are required';
    END IF;
    IF btrim(set_store_platform_id.platform_dispensary_id) = ''
       OR length(set_store_platform_id.platform_dispensary_id) > 255 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('platform_dispensary_id must be a non-empty string of at most 255 characters, not %L',
                             left(set_store_platform_id.platform_dispensary_id, 60));
    END IF;

    SELECT * INTO v_store FROM dispensaries d WHERE d.id = set_store_platform_id.dispensary_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('dispensary %s does not exist', set_store_platform_id.dispensary_id);
    END IF;
    IF v_store.platform IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('dispensary %s has no platform: a platform id needs one', v_store.id),
            HINT = 'Set dispensaries.platform first.';
    END IF;
    IF v_store.platform_dispensary_id = set_store_platform_id.platform_dispensary_id THEN
        RETURN v_store;
    END IF;
    IF v_store.platform_dispensary_id IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('dispensary %s is %s store %L already, not %L', v_store.id, v_store.platform,
                             v_store.platform_dispensary_id, set_store_platform_id.platform_dispensary_id);
    END IF;

    SELECT d.id INTO v_owner
    FROM dispensaries d
    WHERE d.platform = v_store.platform AND d.platform_dispensary_id = set_store_platform_id.platform_dispensary_id;
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '23505',
            MESSAGE = format('%s store %L is dispensary %s already', v_store.platform,
                             set_store_platform_id.platform_dispensary_id, v_owner),
            HINT = 'Two rows for one store: merge them, then deactivate or delete the extra one.';
    END IF;

    UPDATE dispensaries d
    SET platform_dispensary_id = set_store_platform_id.platform_dispensary_id, updated_at = taskpool_now()
    WHERE d.id = v_store.id
    RETURNING * INTO v_store;
    RETURN v_store;
END;
$$;

REVOKE ALL ON FUNCTION set_store_platform_id(integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION set_store_platform_id(integer, text) TO taskpool_worker;

COMMIT;
