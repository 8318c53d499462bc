"""A menu body parsed into the product rows apply_menu_payload takes.

The body is the platform's JSON, `{"products": [{"id", "name", "brand", "category", "size",
"price", "stock", "image_url"}, ...], ...}` (other top-level fields are ignored). Each product
comes out with exactly those eight keys: id as a string, or None when the product has none (left
out, null or blank: apply_menu_payload then gives it product_hash_id of its name, brand, category
and size, the one place that hash is made); name a non-empty string; brand, category and size a
string or null (they may be left out); a platform id may not start with HASHED_ID_PREFIX; price a number >= 0 or null (unknown) and stock a whole
number >= 0 or null; the keys price and stock must be there; image_url an http(s) URL of at most
MAX_IMAGE_URL_CHARS or null (it may be left out). apply_menu_payload takes the rows without
image_url; the product_refresh handler hands the images to link_product_images. Anything else raises CorruptMenu saying what and
where: a body cut short, one that is not JSON (an HTML error page), a product without a field.
The database checks the rows again (apply_menu_payload); this is the first, clearer line.
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import urlsplit

FIELDS = ("id", "name", "brand", "category", "size", "price", "stock")
REQUIRED = ("name", "price", "stock")
EXCERPT_CHARS = 60
# What product_hash_id's ids start with; apply_menu_payload refuses a platform id that does.
HASHED_ID_PREFIX = "hash:"
MAX_IMAGE_URL_CHARS = 2048


class CorruptMenu(ValueError):
    """The menu body cannot be used: the message says what is wrong and where."""


def parse_menu(body: bytes) -> dict[str, Any]:
    """The menu document; CorruptMenu when the body is not a JSON object with a products list."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorruptMenu(
            f"the menu is not UTF-8 text (byte {error.start} of {len(body)} is {body[error.start]:#04x})"
        ) from error
    if not text.strip():
        raise CorruptMenu(f"the menu is empty ({len(body)} bytes)")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        # The end of the text reached inside a value: the body was cut short.
        if error.pos >= len(text.rstrip()):
            raise CorruptMenu(
                f"the menu is truncated: its JSON ends early ({error.msg} at character {error.pos}"
                f" of {len(text)})"
            ) from error
        raise CorruptMenu(
            f"the menu is not JSON: {error.msg} at line {error.lineno} column {error.colno};"
            f" it starts with {_excerpt(text)}"
        ) from error
    if not isinstance(document, dict):
        raise CorruptMenu(f"the menu must be a JSON object, not {_json_type(document)}")
    if "products" not in document:
        raise CorruptMenu(
            f"the menu has no 'products' (its fields: {', '.join(sorted(document)) or 'none'})"
        )
    if not isinstance(document["products"], list):
        raise CorruptMenu(
            f"the menu's 'products' must be a list, not {_json_type(document['products'])}"
        )
    return document


def normalize_menu(body: bytes) -> list[dict[str, Any]]:
    """The products of a menu body, normalized (see the module docstring)."""
    products = parse_menu(body)["products"]
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, product in enumerate(products):
        row = normalize_product(product, index)
        if row["id"] is None:
            rows.append(row)
            continue
        first = seen.setdefault(row["id"], index)
        if first != index:
            raise CorruptMenu(
                f"products[{index}]: id {row['id']!r} appears twice (also products[{first}])"
            )
        rows.append(row)
    return rows


def normalize_product(product: Any, index: int) -> dict[str, Any]:
    """One product as a row; CorruptMenu naming products[index] and the field at fault."""
    where = f"products[{index}]"
    if not isinstance(product, dict):
        raise CorruptMenu(f"{where}: a product must be a JSON object, not {_json_type(product)}")
    missing = [name for name in REQUIRED if name not in product]
    if missing:
        raise CorruptMenu(
            f"{where}: missing {', '.join(missing)} (a product needs {', '.join(REQUIRED)})"
        )

    product_id = product.get("id")
    if isinstance(product_id, int) and not isinstance(product_id, bool):
        product_id = str(product_id)
    if isinstance(product_id, str) and not product_id.strip():
        product_id = None
    if product_id is not None and not isinstance(product_id, str):
        raise CorruptMenu(
            f"{where}: id must be a string, an integer or left out, not {_show(product['id'])}"
        )
    if product_id is not None and product_id.startswith(HASHED_ID_PREFIX):
        raise CorruptMenu(
            f"{where}: id {_show(product_id)} starts with {HASHED_ID_PREFIX}, which only ids hashed"
            " by product_hash_id do"
        )
    if product_id is not None:
        where = f"{where} (id {product_id!r})"

    name = product["name"]
    if not isinstance(name, str) or not name.strip():
        raise CorruptMenu(f"{where}: name must be a non-empty string, not {_show(name)}")
    texts = {}
    for field in ("brand", "category", "size"):
        value = product.get(field)
        if value is not None and not isinstance(value, str):
            raise CorruptMenu(f"{where}: {field} must be a string or null, not {_show(value)}")
        texts[field] = value

    price = product["price"]
    if price is not None and (
        not isinstance(price, (int, float))
        or isinstance(price, bool)
        or not math.isfinite(price)
        or price < 0
    ):
        raise CorruptMenu(f"{where}: price must be a number >= 0 or null, not {_show(price)}")
    stock = product["stock"]
    if isinstance(stock, float) and stock.is_integer():
        stock = int(stock)
    if stock is not None and (not isinstance(stock, int) or isinstance(stock, bool) or stock < 0):
        raise CorruptMenu(f"{where}: stock must be a whole number >= 0 or null, not {_show(stock)}")

    image_url = product.get("image_url")
    if image_url is not None and not _is_image_url(image_url):
        raise CorruptMenu(
            f"{where}: image_url must be an http(s) URL of at most {MAX_IMAGE_URL_CHARS}"
            f" characters or null, not {_show(image_url)}"
        )

    return {
        "id": product_id,
        "name": name,
        "brand": texts["brand"],
        "category": texts["category"],
        "size": texts["size"],
        "price": price,
        "stock": stock,
        "image_url": image_url,
    }


def _is_image_url(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > MAX_IMAGE_URL_CHARS:
        return False
    if any(c.isspace() or not c.isprintable() for c in value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _excerpt(text: str) -> str:
    start = " ".join(text.split())
    return repr(start if len(start) <= EXCERPT_CHARS else start[: EXCERPT_CHARS - 1] + "…")
