-- Revert taskpool_crawler:proxy_label_masks_userinfo from pg

BEGIN;

-- crawler_proxy_functions' label, which masked the password only.
CREATE OR REPLACE FUNCTION _proxy_label(url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
STRICT
AS $$
    SELECT regexp_replace(_proxy_label.url, '^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*):[^@/]*@', '\1:***@');
$$;

COMMENT ON COLUMN crawler_proxies.url IS
    'http://host:port or https://host:port, optionally with user:password@ before the host; '
    'v_crawler_proxies and the logs show it with the password masked.';
COMMENT ON VIEW v_crawler_proxies IS
    'Each proxy with its health, its password masked: state is ready (take_proxy may hand it out), '
    'rested (a failure rests it until rested_until) or disabled (disable_proxy).';

COMMIT;
