-- Deploy taskpool:task_spec_hash to pg

BEGIN;
SET client_min_messages = 'warning';

-- task_spec_hash
-- The dedupe key of a task's content (seed 004's spec_hash): 'sha256:' and the hex SHA-256 of its role, store and payload.
CREATE FUNCTION task_spec_hash(role text, dispensary_id integer DEFAULT NULL, payload jsonb DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
IMMUTABLE PARALLEL SAFE
AS $$
-- Example:
--   SELECT id, status FROM worker_tasks
--   WHERE dedupe_key = task_spec_hash('product_resync', 42, '{"reason": "manual"}');
-- What enqueue's dedupe_by_content makes the key. The hashed text is the JSON array
-- [role, dispensary_id, payload] as jsonb writes it, which is canonical for key order and
-- whitespace: {"b": 1, "a": 2} and {"a":2,"b":1} hash alike; 1 and 1.0 do not. A payload of NULL
-- or JSON null is {}, as enqueue stores it.
DECLARE
    v_payload jsonb := coalesce(nullif(task_spec_hash.payload, 'null'), '{}');
BEGIN
    IF task_spec_hash.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'task_spec_hash needs a role';
    END IF;
    IF jsonb_typeof(v_payload) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('payload must be a JSON object, not %s', jsonb_typeof(v_payload));
    END IF;
    RETURN 'sha256:' || encode(sha256(convert_to(
        jsonb_build_array(task_spec_hash.role, task_spec_hash.dispensary_id, v_payload)::text, 'UTF8')), 'hex');
END;
$$;

REVOKE ALL ON FUNCTION task_spec_hash(text, integer, jsonb) FROM PUBLIC;

COMMENT ON FUNCTION task_spec_hash(text, integer, jsonb) IS $$The dedupe key of a task's content (seed 004's spec_hash): 'sha256:' and the hex SHA-256 of its role, store and payload.
Example:
  SELECT id, status FROM worker_tasks
  WHERE dedupe_key = task_spec_hash('product_resync', 42, '{"reason": "manual"}');
enqueue_task(..., dedupe_by_content := true) and a spec's "dedupe_by_content": true make it the
task's dedupe_key. The text hashed is the JSON array [role, dispensary_id, payload] as jsonb writes
it: key order and whitespace do not matter, 1 and 1.0 differ; a NULL payload is {}.$$;

COMMIT;
