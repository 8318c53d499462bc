-- Deploy taskpool:_jsonb_bigint to pg

BEGIN;
SET client_min_messages = 'warning';

-- _jsonb_bigint
-- The JSON value as a bigint when it is a whole number in bigint range, else NULL (never an error).
CREATE FUNCTION _jsonb_bigint(value jsonb)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Nested CASEs, because AND does not promise to test the type before the cast.
    SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN
        CASE WHEN value::numeric = trunc(value::numeric)
                  AND value::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
             THEN value::numeric::bigint
        END
    END;
$$;

REVOKE ALL ON FUNCTION _jsonb_bigint(jsonb) FROM PUBLIC;

COMMIT;
