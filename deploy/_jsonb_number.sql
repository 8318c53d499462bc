-- Deploy taskpool:_jsonb_number to pg

BEGIN;
SET client_min_messages = 'warning';

-- _jsonb_number
-- The JSON value as a numeric when it is a JSON number, else NULL (never an error).
CREATE FUNCTION _jsonb_number(value jsonb)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN value::numeric END;
$$;

REVOKE ALL ON FUNCTION _jsonb_number(jsonb) FROM PUBLIC;

COMMIT;
