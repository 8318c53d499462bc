-- Deploy taskpool_crawler:proxy_label_masks_userinfo to pg
-- requires: crawler_proxy_functions

BEGIN;
SET client_min_messages = 'warning';

-- _proxy_label
-- A proxy URL with its credentials (user and password alike) masked: what views, messages and logs show.
CREATE OR REPLACE FUNCTION _proxy_label(url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
STRICT
AS $$
    -- A provider's key may be the user name alone (http://KEY:@host, http://TOKEN@host): the
    -- whole userinfo goes, up to the last @ before the path.
    SELECT regexp_replace(_proxy_label.url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/]*@', '\1***@');
$$;

COMMENT ON COLUMN crawler_proxies.url IS
    'http://host:port or https://host:port, optionally with user:password@ (or a token alone) '
    'before the host; v_crawler_proxies, the messages and the logs show it with that userinfo masked.';
COMMENT ON VIEW v_crawler_proxies IS
    'Each proxy with its health, its credentials masked: state is ready (take_proxy may hand it out), '
    'rested (a failure rests it until rested_until) or disabled (disable_proxy).';

COMMIT;
