-- Deploy taskpool:_jsonb_integer to pg

BEGIN;
SET client_min_messages = 'warning';

-- _jsonb_integer
-- The JSON value as an integer when it is a whole number in integer range, else NULL (never an error).
CREATE FUNCTION _jsonb_integer(value jsonb)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Nested CASEs, because AND does not promise to test the type before the cast.
    SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN
        CASE WHEN value::numeric = trunc(value::numeric)
                  AND value::numeric BETWEEN -2147483648 AND 2147483647
             THEN value::numeric::integer
        END
    END;
$$;

REVOKE ALL ON FUNCTION _jsonb_integer(jsonb) FROM PUBLIC;

COMMIT;
