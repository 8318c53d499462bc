-- Deploy taskpool:_concurrency_keys_of to pg
-- requires: concurrency_limits

BEGIN;
SET client_min_messages = 'warning';

-- _concurrency_keys_of
-- The concurrency keys a task has, besides its store: (role, its role), (platform, its platform) and its own key, the header concurrency_key ('proxy:NAME' is (proxy, NAME), any other (key, the value)).
CREATE FUNCTION _concurrency_keys_of(role text, platform text, headers jsonb)
RETURNS TABLE (kind text, key text)
LANGUAGE sql
IMMUTABLE
AS $$
    -- One SELECT, so that callers get it inlined. A key is left out when the task has none.
    SELECT k.kind, k.key
    FROM (VALUES
        ('role', _concurrency_keys_of.role),
        ('platform', _concurrency_keys_of.platform),
        (CASE WHEN _concurrency_keys_of.headers ->> 'concurrency_key' LIKE 'proxy:%' THEN 'proxy' ELSE 'key' END,
         CASE WHEN _concurrency_keys_of.headers ->> 'concurrency_key' LIKE 'proxy:%'
              THEN substr(_concurrency_keys_of.headers ->> 'concurrency_key', 7)
              ELSE _concurrency_keys_of.headers ->> 'concurrency_key' END)) AS k(kind, key)
    WHERE k.key IS NOT NULL;
$$;

REVOKE ALL ON FUNCTION _concurrency_keys_of(text, text, jsonb) FROM PUBLIC;

COMMIT;
