-- Deploy taskpool_crawler:product_hash_id to pg
-- requires: taskpool:taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- product_hash_id
-- The id of a product its platform gives none: 'hash:' and the sha256 of its normalized name, brand, category and size.
CREATE FUNCTION product_hash_id(name text, brand text, category text, size text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
-- Example:
--   SELECT product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g');
--   -- hash:c28b17e10056a21b53f1c35e9f157bd5cd41b10d9ee83621ad9699f55576f699
-- Each component is normalized: Unicode NFKC (so a no-break space is a space, a full-width
-- letter its ASCII one), lower-cased in ICU's root locale (whatever the database's locale),
-- every run of whitespace made one space, and trimmed. A NULL or blank brand, category or size
-- is the empty string. The four are joined with | (a | or \ inside one escaped with \) and the
-- id is 'hash:' followed by the sha256 of that text's UTF-8 bytes in lower-case hex.
-- apply_menu_payload refuses platform ids starting with 'hash:', so a hashed id never equals
-- one. A NULL or blank name raises 22023: the name is what identifies such a product.
DECLARE
    v_parts text[];
BEGIN
    IF product_hash_id.name IS NULL OR btrim(normalize(product_hash_id.name, NFKC), E' \t\n\r\f\v') = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('product_hash_id needs a name, not %s',
                             coalesce(quote_literal(product_hash_id.name), 'NULL')),
            HINT = 'A product without a platform id is known by its name, brand, category and size.';
    END IF;
    SELECT array_agg(replace(replace(
               btrim(regexp_replace(lower(normalize(coalesce(c.part, ''), NFKC) COLLATE "und-x-icu"),
                                    '[[:space:]]+', ' ', 'g'), ' '),
               '\', '\\'), '|', '\|') ORDER BY c.n)
    INTO v_parts
    FROM unnest(ARRAY[product_hash_id.name, product_hash_id.brand, product_hash_id.category, product_hash_id.size])
         WITH ORDINALITY AS c(part, n);
    RETURN 'hash:' || encode(sha256(convert_to(array_to_string(v_parts, '|'), 'UTF8')), 'hex');
END;
$$;

COMMENT ON FUNCTION product_hash_id(text, text, text, text) IS $$The id of a product its platform gives none: 'hash:' and the sha256 of its normalized name, brand, category and size.
Example:
  SELECT product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g') = product_hash_id('  BLUE  dream', 'acme', 'flower', '3.5G');
  -- true$$;

REVOKE ALL ON FUNCTION product_hash_id(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION product_hash_id(text, text, text, text) TO taskpool_worker;

COMMIT;
