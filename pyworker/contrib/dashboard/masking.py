"""Secrets kept off the dashboard: the credentials a URL may carry, wherever one is shown.

A task's payload, result or error, a schedule's payload, a platform's event, a proxy, the
database's own message: any of them may hold a URL with a password (`postgresql://app:s3cret@db`),
a key given as the user name (`http://KEY:@proxy`, `http://TOKEN@proxy`) or a password in its
query (`?password=...`), or a libpq connection string (`password=...`). Every page and every
JSON answer passes through `masked`, so none reaches a browser.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup

MASK = "***"
# Characters that end a URL's authority as shown: a path, a query, a fragment, white space, a
# quote or bracket around it, and a backslash (a JSON escape must stay whole).
_NOT_AUTHORITY = r"\s/?#\"'<>\\"
# scheme://USERINFO@host: the last @ of the authority ends the user info (a password may hold a
# raw @).
_USERINFO = re.compile(rf"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^{_NOT_AUTHORITY}]*)@")
# password=VALUE in a URL's query or a libpq connection string (sslpassword too), the value
# quoted or not.
_PASSWORD = re.compile(r"(?P<key>\b(?:ssl)?password\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'|[^\s&#;\"'<>\\]+)", re.IGNORECASE)


def _hidden_userinfo(match: re.Match[str]) -> str:
    user, _, password = match["userinfo"].partition(":")
    # user:password keeps the user; a lone user (or user:) is a key or token itself.
    shown = f"{user}:{MASK}" if password and user else MASK
    return f"{match['scheme']}{shown}@"


def masked_text(text: str) -> str:
    """`text` with the credentials of every URL and connection string in it replaced by ***."""
    if "@" in text:
        text = _USERINFO.sub(_hidden_userinfo, text)
    if "=" in text:
        text = _PASSWORD.sub(lambda match: f"{match['key']}{MASK}", text)
    return text


def masked(value: Any) -> Any:
    """`value` with every string in it masked (masked_text), dicts and lists walked; HTML already
    made safe stays safe."""
    if isinstance(value, Markup):
        return Markup(masked_text(str(value)))
    if isinstance(value, str):
        return masked_text(value)
    if isinstance(value, dict):
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(item) for item in value]
    return value
