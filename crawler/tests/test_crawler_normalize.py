"""Menu bodies parsed into product rows (no database): the normal case, and the clear errors
for a body cut short, one that is not JSON, and products with missing or bad fields."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskpool_crawler.normalize import CorruptMenu, normalize_menu


def menu(*products: Any, **fields: Any) -> bytes:
    return json.dumps(
        {
            "platform": "dutchie",
            "platform_store_id": "s1",
            "clock_hours": 0.0,
            "products": list(products),
            **fields,
        }
    ).encode()


def product(**changes: Any) -> dict[str, Any]:
    base = {
        "id": "a1",
        "name": "Blue Dream 3.5g",
        "brand": "Lumen",
        "category": "Flower",
        "price": 34.99,
        "stock": 12,
    }
    return {**base, **changes}


def test_products_come_out_with_their_fields_in_menu_order() -> None:
    body = menu(product(), product(id=17, name="Runtz 1g", brand=None, price=9, stock=0, extra="x"))
    assert normalize_menu(body) == [
        {
            "id": "a1",
            "name": "Blue Dream 3.5g",
            "brand": "Lumen",
            "category": "Flower",
            "size": None,
            "price": 34.99,
            "stock": 12,
            "image_url": None,
        },
        {
            "id": "17",
            "name": "Runtz 1g",
            "brand": None,
            "category": "Flower",
            "size": None,
            "price": 9,
            "stock": 0,
            "image_url": None,
        },
    ]


def test_unknown_price_and_stock_and_missing_brand_are_allowed() -> None:
    body = menu({"id": "a1", "name": "Calm Tincture 30ml", "price": None, "stock": None})
    assert normalize_menu(body) == [
        {
            "id": "a1",
            "name": "Calm Tincture 30ml",
            "brand": None,
            "category": None,
            "size": None,
            "price": None,
            "stock": None,
            "image_url": None,
        },
    ]
    assert normalize_menu(menu(product(stock=3.0)))[0]["stock"] == 3


def test_an_image_url_is_kept() -> None:
    url = "https://images.example/dutchie/flower-1.png"
    assert normalize_menu(menu(product(image_url=url)))[0]["image_url"] == url
    assert normalize_menu(menu(product(image_url=None)))[0]["image_url"] is None
    with pytest.raises(CorruptMenu, match="image_url must be"):
        normalize_menu(menu(product(image_url="https://" + "a" * 2048 + ".example/x.png")))
    with pytest.raises(CorruptMenu, match="image_url must be"):
        normalize_menu(menu(product(image_url="https://images.example/a b.png")))


def test_a_product_without_an_id_comes_out_with_id_none_for_the_database_to_hash() -> None:
    """Left out, null or blank: apply_menu_payload gives it product_hash_id (one source of the
    hash), and two such products are not duplicates here (they may differ in name or size)."""
    without = {key: value for key, value in product(size="3.5g").items() if key != "id"}
    rows = normalize_menu(menu(without, product(id=None, name="Runtz 1g"), product(id="  ", size=None)))
    assert [(row["id"], row["name"], row["size"]) for row in rows] == [
        (None, "Blue Dream 3.5g", "3.5g"),
        (None, "Runtz 1g", None),
        (None, "Blue Dream 3.5g", None),
    ]


def test_an_empty_menu_has_no_products() -> None:
    assert normalize_menu(menu()) == []


def test_a_body_cut_short_is_truncated() -> None:
    body = menu(product(), product(id="a2"))
    with pytest.raises(CorruptMenu, match=r"^the menu is truncated: its JSON ends early"):
        normalize_menu(body[: len(body) // 2])


def test_a_body_that_is_not_json_says_how_it_starts() -> None:
    with pytest.raises(CorruptMenu) as raised:
        normalize_menu(b"<html><body><h1>502 Bad Gateway</h1></body></html>\n")
    assert str(raised.value).startswith("the menu is not JSON: Expecting value at line 1 column 1")
    assert "'<html><body><h1>502 Bad Gateway</h1></body></html>'" in str(raised.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "the menu is empty (0 bytes)"),
        (b"\xff\xfe{}", "the menu is not UTF-8 text (byte 0 of 4 is 0xff)"),
        (b"[1, 2]", "the menu must be a JSON object, not an array"),
        (b'{"items": []}', "the menu has no 'products' (its fields: items)"),
        (b'{"products": {"a": 1}}', "the menu's 'products' must be a list, not an object"),
    ],
)
def test_a_body_of_the_wrong_shape_is_named(body: bytes, message: str) -> None:
    with pytest.raises(CorruptMenu) as raised:
        normalize_menu(body)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("not a product", "products[1]: a product must be a JSON object, not a string"),
        (
            {"id": "a2", "name": "X"},
            "products[1]: missing price, stock (a product needs name, price, stock)",
        ),
        (product(id=True), "products[1]: id must be a string, an integer or left out, not true"),
        (product(id=["a2"]), 'products[1]: id must be a string, an integer or left out, not ["a2"]'),
        (product(id=None, size=3.5), "products[1]: size must be a string or null, not 3.5"),
        (
            product(id="hash:0a1b"),
            'products[1]: id "hash:0a1b" starts with hash:, which only ids hashed by product_hash_id do',
        ),
        (
            product(id="a2", name="  "),
            "products[1] (id 'a2'): name must be a non-empty string, not \"  \"",
        ),
        (product(id="a2", brand=5), "products[1] (id 'a2'): brand must be a string or null, not 5"),
        (
            product(id="a2", category=[]),
            "products[1] (id 'a2'): category must be a string or null, not []",
        ),
        (
            product(id="a2", price="12.00"),
            "products[1] (id 'a2'): price must be a number >= 0 or null, not \"12.00\"",
        ),
        (
            product(id="a2", price=-1),
            "products[1] (id 'a2'): price must be a number >= 0 or null, not -1",
        ),
        (
            product(id="a2", stock=1.5),
            "products[1] (id 'a2'): stock must be a whole number >= 0 or null, not 1.5",
        ),
        (
            product(id="a2", stock=-2),
            "products[1] (id 'a2'): stock must be a whole number >= 0 or null, not -2",
        ),
        (product(), "products[1]: id 'a1' appears twice (also products[0])"),
        (
            product(id="a2", image_url="/platforms/jane/images/flower-1.png"),
            "products[1] (id 'a2'): image_url must be an http(s) URL of at most 2048 characters"
            ' or null, not "/platforms/jane/images/flower-1.png"',
        ),
        (
            product(id="a2", image_url="file:///etc/passwd"),
            "products[1] (id 'a2'): image_url must be an http(s) URL of at most 2048 characters"
            ' or null, not "file:///etc/passwd"',
        ),
        (
            product(id="a2", image_url=7),
            "products[1] (id 'a2'): image_url must be an http(s) URL of at most 2048 characters"
            " or null, not 7",
        ),
    ],
)
def test_a_bad_product_is_named_by_its_index_and_field(bad: Any, message: str) -> None:
    with pytest.raises(CorruptMenu) as raised:
        normalize_menu(menu(product(), bad))
    assert str(raised.value) == message
