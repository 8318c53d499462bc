-- Deploy taskpool:_cron_field to pg
-- requires: cron_next_run

-- _cron_field's home: its live body, unchanged from cron_next_run.
-- Change _cron_field here, with `sqitch rework _cron_field`.

BEGIN;
SET client_min_messages = 'warning';

-- _cron_field
-- The values one field of a cron expression allows, sorted; raises 22023 naming the field.
CREATE OR REPLACE FUNCTION _cron_field(field text, field_name text, low integer, high integer, names text[] DEFAULT NULL)
RETURNS integer[]
LANGUAGE plpgsql
IMMUTABLE
AS $$
-- Example:
--   SELECT _cron_field('*/15', 'minute', 0, 59);    -- {0,15,30,45}
--   SELECT _cron_field('mon-fri', 'day of week', 0, 7, ARRAY['sun','mon','tue','wed','thu','fri','sat']);
-- An item is *, a value, or a range a-b, each with an optional /step; a/step runs from a to the
-- field's end. Names (jan..dec, sun..sat) stand for their numbers. The caller maps day of
-- week 7 to 0.
DECLARE
    v_item   text;
    v_parts  text[];
    v_from   integer;
    v_to     integer;
    v_step   integer;
    v_values integer[] := '{}';
BEGIN
    FOREACH v_item IN ARRAY string_to_array(lower(field), ',') LOOP
        v_parts := regexp_match(v_item, '^(\*|[0-9a-z]+)(?:-([0-9a-z]+))?(?:/([0-9]+))?$');
        IF v_parts IS NULL OR (v_parts[1] = '*' AND v_parts[2] IS NOT NULL) THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('cron %s field %L is not a value, a range or a step', field_name, field),
                HINT = 'Each field is a comma list of *, N, A-B, */S, N/S or A-B/S.';
        END IF;
        v_from := CASE WHEN v_parts[1] = '*' THEN low
                       WHEN v_parts[1] ~ '^[0-9]+$' THEN left(v_parts[1], 9)::integer
                       ELSE low + array_position(names, v_parts[1]) - 1 END;
        v_to := CASE WHEN v_parts[1] = '*' THEN high
                     WHEN v_parts[2] IS NOT NULL AND v_parts[2] ~ '^[0-9]+$' THEN left(v_parts[2], 9)::integer
                     WHEN v_parts[2] IS NOT NULL THEN low + array_position(names, v_parts[2]) - 1
                     WHEN v_parts[3] IS NOT NULL THEN high
                     ELSE v_from END;
        v_step := coalesce(left(v_parts[3], 9)::integer, 1);
        IF v_from IS NULL OR v_to IS NULL OR v_from NOT BETWEEN low AND high OR v_to NOT BETWEEN low AND high
           OR v_from > v_to OR v_step = 0 THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('cron %s field %L is out of range', field_name, field),
                HINT = format('The %s goes from %s to %s%s; a range goes upwards; a step is 1 or more.', field_name, low, high,
                              CASE WHEN names IS NULL THEN '' ELSE ' (or ' || array_to_string(names, ', ') || ')' END);
        END IF;
        v_values := v_values || ARRAY(SELECT generate_series(v_from, v_to, v_step));
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT v FROM unnest(v_values) AS v ORDER BY v);
END;
$$;

COMMIT;
