"""The simulated menu platform: stores and menus that drift with a simulated clock.

Everything is a function of the seed and the clock; nothing reads the wall clock or a global
random generator. Every draw comes from a stream of BLAKE2b digests of a key (the seed, what is
drawn, and for whom), so the same seed and the same clock give the same stores and byte-identical
menu JSON, in any process and on any Python version; another seed gives other stores and menus.

Platforms and stores
    `platforms` (default dutchie, jane) and `states` (default AZ, CA, CO, MI). Store number i
    (0..stores-1) is on platform i mod P, in state (i div P) mod S, so every platform has stores
    in every state (once there are P*S stores). Each store has a stable `platform_store_id` in
    its platform's style (dutchie: 24 hex digits, jane: a number, any other platform: 12 hex
    digits; unique per platform), a name (two words of a small list), a city of its state, a
    slug (name and city, with -2, -3... when taken on the platform) and a menu URL
    `https://menus.example/{platform}/{slug}`.

    Most stores are open from hour 0. round(5% of stores), picked by the seed, open later, at a
    whole hour from 4 to 48 (`opens_at_hours`): a store is listed, resolved and serves its menu
    once the clock reaches its opening. So "new stores open" as the clock advances.

The clock and menus
    The clock counts hours from 0 and only moves forward (`advance`), up to ten years. Menus
    change in steps of 4 hours (`STEP_HOURS`): the menu at clock h is the menu of step
    floor(h / 4).

    At step 0 a store has 20-60 products, numbered 0, 1, 2... in order of appearance. A product's
    id (16 hex digits), name (a strain, flavor or blend and a form, e.g. "Blue Dream 3.5g"),
    brand and category are fixed by (seed, store, product number); so are its first price
    (dollars within its form's range, some at .99) and first stock (0-40, about 10% out of stock).

    At each step from 1 on, each product on the menu, with draws keyed by (seed, store, product,
    step), in this order:
      - disappears for good with probability 5%;
      - otherwise changes price with probability 20%, by 2-8% up (55%) or down, to the cent
        (never below $1.00, and always to another price);
      - and changes stock with probability 30%: an out-of-stock product is restocked (5-40),
        another one moves by -15..+10 (never by 0, never below 0).
    Then 0-3 new products appear (keyed by seed, store and step), taking the next numbers, as
    many more as bring the menu back to 20 products, and never more than bring it to 60.

    A product's price and stock at a step are thus a function of (seed, store, product, step),
    computed by replaying the steps from 0. Each store caches its latest menu, so going forward
    one step costs one step; asking for an earlier step (another clock) replays from 0. The
    products of the cached menus are cached too, and forgotten when they disappear.

A menu document lists the products in order of appearance, with `price` a number of dollars
to the cent and `stock` an integer >= 0, and `size` the amount its form names ("3.5g" of "Blue
Dream 3.5g", "100mg" of gummies) or null for a form that names none (a disposable vape).
`id_less_share` (0 to 1, default 0) of the products, picked by (seed, store, product number) so
that a product has its id in every crawl or in none, come with `id` null, as some platforms list
products (seed 003): the crawler gives them an id hashed from name, brand, category and size; `encode` turns a document into the JSON bytes the
server sends.

Images
    A product's `image_url` is fixed by (seed, brand, name): about 10% of products have none
    (null), the others one of IMAGES_PER_CATEGORY images of their category, so many products,
    in every store and on every platform, share an image. The menu gives it as a path,
    `/platforms/{platform}/images/{category}-{n}.png`, which the server makes absolute with its
    own URL. An image's bytes (`image`) are a small valid PNG whose colours come from (seed,
    image name): the same name, the same bytes, on every platform. `broken_image_share` (0 to 1,
    default 0) of the images, picked by (seed, image name) so that a larger share keeps the
    smaller one's, are broken (`broken_image`): answered 404, or 200 with bytes that are not an
    image, or 200 with the PNG cut short.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import threading
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_SEED = 42
DEFAULT_STORES = 300
DEFAULT_STATES = ("AZ", "CA", "CO", "MI")
DEFAULT_PLATFORMS = ("dutchie", "jane")
MENU_URL_BASE = "https://menus.example"

# The menus change every STEP_HOURS hours of the clock, which stops at MAX_CLOCK_HOURS (ten
# years: a menu there is a replay of 21900 steps, seconds of work).
STEP_HOURS = 4
MAX_CLOCK_HOURS = 24 * 365 * 10

# Stores that open after hour 0, and when.
LATE_STORE_SHARE = 0.05
LATE_OPENING_HOURS = (4, 48)

# Menu sizes, and what happens to each product at each step.
MENU_MIN_PRODUCTS = 20
MENU_MAX_PRODUCTS = 60
DISAPPEAR_RATE = 0.05
PRICE_CHANGE_RATE = 0.20
PRICE_CHANGE_PCT = (0.02, 0.08)
PRICE_UP_SHARE = 0.55
MIN_PRICE_CENTS = 100
STOCK_CHANGE_RATE = 0.30
MAX_NEW_PRODUCTS = 3

# Product images: how many per category, the share of products without one, their size.
IMAGES_PER_CATEGORY = 6
NO_IMAGE_SHARE = 0.10
IMAGE_PIXELS = 16
BROKEN_IMAGE_KINDS = ("not_found", "not_an_image", "truncated")

_STATE_CODE = re.compile(r"^[A-Z]{2}$")
_PLATFORM_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")

CITIES: dict[str, tuple[str, ...]] = {
    "AZ": ("Phoenix", "Tucson", "Mesa", "Scottsdale", "Tempe", "Flagstaff", "Chandler", "Sedona",
           "Glendale", "Yuma"),
    "CA": ("Los Angeles", "San Francisco", "Oakland", "San Diego", "Sacramento", "San Jose",
           "Long Beach", "Fresno", "Santa Cruz", "Eureka"),
    "CO": ("Denver", "Boulder", "Colorado Springs", "Aurora", "Fort Collins", "Pueblo", "Durango",
           "Breckenridge", "Lakewood", "Grand Junction"),
    "MI": ("Detroit", "Ann Arbor", "Grand Rapids", "Lansing", "Kalamazoo", "Flint",
           "Traverse City", "Ferndale", "Battle Creek", "Muskegon"),
    "NV": ("Las Vegas", "Reno", "Henderson", "Carson City", "Sparks"),
    "OR": ("Portland", "Eugene", "Salem", "Bend", "Medford"),
    "WA": ("Seattle", "Spokane", "Tacoma", "Olympia", "Bellingham"),
    "IL": ("Chicago", "Springfield", "Naperville", "Peoria", "Rockford"),
    "MA": ("Boston", "Worcester", "Cambridge", "Northampton", "Salem"),
    "NY": ("New York", "Buffalo", "Rochester", "Albany", "Ithaca"),
}
# Cities of a state with no list above.
OTHER_CITIES = ("Springfield", "Riverside", "Fairview", "Franklin", "Greenville", "Madison",
                "Georgetown", "Bristol")

STORE_NAME_FIRST = ("Green", "High", "Herbal", "Golden", "Emerald", "Sunset", "Mountain",
                    "Desert", "River", "Lucky", "Royal", "Urban", "Nature's", "Kind", "Blue",
                    "Silver", "Pacific", "Evergreen", "Cloud Nine", "Northern")
STORE_NAME_SECOND = ("Leaf", "Bloom", "Valley", "Peak", "Garden", "Harvest", "Roots", "Canyon",
                     "Grove", "Farms", "Wellness", "Remedy", "Apothecary", "Collective",
                     "Cannabis Co.", "Dispensary", "Provisions", "Supply", "House", "Station")

BRANDS = ("Lumen", "Highland Farms", "Canyon Craft", "Blue River", "Sundial", "Fieldstone",
          "Hazy Days", "Redwood Extracts", "Pinnacle", "Wildflower", "Copper State",
          "Great Lakes Grown")

STRAINS = ("Blue Dream", "OG Kush", "Sour Diesel", "Gelato", "Wedding Cake", "Gorilla Glue",
           "Pineapple Express", "Jack Herer", "Granddaddy Purple", "Zkittlez", "Durban Poison",
           "Northern Lights", "Runtz", "Ice Cream Cake", "Tangie", "Lemon Haze")
FLAVORS = ("Watermelon", "Sour Apple", "Mango", "Blueberry", "Dark Chocolate", "Peppermint",
           "Lemon", "Black Cherry")
BLENDS = ("CBD 1:1", "Relief", "Calm", "Sleep", "Recovery", "Daytime")

# category -> (the words its names start with, its forms as (form, min dollars, max dollars))
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[tuple[str, int, int], ...]]] = {
    "Flower": (STRAINS, (("1g", 8, 18), ("3.5g", 25, 60), ("7g", 45, 100), ("14g", 80, 180))),
    "Pre-Rolls": (STRAINS, (("1g Pre-Roll", 6, 16), ("5-Pack Pre-Rolls", 20, 45),
                            ("Infused Pre-Roll", 12, 25))),
    "Vaporizers": (STRAINS, (("0.5g Cartridge", 25, 45), ("1g Cartridge", 40, 70),
                             ("Disposable Vape", 30, 55))),
    "Edibles": (FLAVORS, (("Gummies 100mg", 12, 28), ("Chocolate Bar 100mg", 15, 30),
                          ("Mints 100mg", 10, 22))),
    "Concentrates": (STRAINS, (("Live Resin 1g", 30, 65), ("Shatter 1g", 20, 45),
                               ("Rosin 1g", 45, 80))),
    "Tinctures": (BLENDS, (("Tincture 30ml", 30, 65),)),
    "Topicals": (BLENDS, (("Balm 2oz", 20, 45), ("Lotion 4oz", 18, 40))),
}
CATEGORY_NAMES = tuple(CATEGORIES)


class UnknownPlatform(LookupError):
    """No such platform."""

    def __init__(self, platform: str) -> None:
        super().__init__(f"unknown platform {platform!r}")
        self.platform = platform


class UnknownImage(LookupError):
    """No such image on the platform."""

    def __init__(self, platform: str, name: str) -> None:
        super().__init__(f"no image {name!r} on {platform}")
        self.platform = platform


class UnknownStore(LookupError):
    """No such store open on the platform (at the current clock)."""

    def __init__(self, platform: str, message: str) -> None:
        super().__init__(message)
        self.platform = platform


# Deterministic draws


class Draws:
    """Uniform draws from a key: 64-bit words of BLAKE2b(key, block 0), (key, block 1), ..."""

    __slots__ = ("_key", "_block", "_words")

    def __init__(self, *key: Any) -> None:
        self._key = "\x1f".join(str(part) for part in key)
        self._block = 0
        self._words: list[int] = []

    def word(self) -> int:
        """The next 64-bit word."""
        if not self._words:
            digest = hashlib.blake2b(
                f"{self._key}\x1e{self._block}".encode(), digest_size=64
            ).digest()
            self._block += 1
            self._words = list(reversed(struct.unpack("<8Q", digest)))
        return self._words.pop()

    def random(self) -> float:
        """A float in [0, 1)."""
        return (self.word() >> 11) / 9007199254740992.0  # 53 bits / 2**53

    def randint(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        return low + self.word() % (high - low + 1)

    def choice(self, items: Sequence[Any]) -> Any:
        return items[self.word() % len(items)]

    def hex(self, digits: int) -> str:
        return "".join(f"{self.word():016x}" for _ in range((digits + 15) // 16))[:digits]


def encode(document: Any) -> bytes:
    """A document as the JSON bytes the server sends: the same document, the same bytes."""
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# Stores


@dataclass(frozen=True)
class Store:
    """One store of a platform."""

    index: int
    platform: str
    platform_store_id: str
    name: str
    state: str
    city: str
    slug: str
    menu_url: str
    opens_at_hours: int

    def is_open(self, clock_hours: float) -> bool:
        return self.opens_at_hours <= clock_hours

    def to_json(self) -> dict[str, Any]:
        """The store as the stores endpoint lists it."""
        return {
            "platform_store_id": self.platform_store_id,
            "name": self.name,
            "state": self.state,
            "city": self.city,
            "menu_url": self.menu_url,
        }


def _store_id(platform: str, draws: Draws) -> str:
    if platform == "dutchie":
        return draws.hex(24)
    if platform == "jane":
        return str(draws.randint(1000, 999999))
    return draws.hex(12)


# Menus


@dataclass(frozen=True)
class Product:
    """A product's fixed attributes (its price and stock move with the clock)."""

    number: int
    id: str
    name: str
    brand: str
    category: str
    size: str | None  # the amount its form names, e.g. 3.5g; None when the form names none
    first_price_cents: int
    first_stock: int
    image: str | None  # the image's file name, e.g. flower-3.png; None for no image


class _Menu:
    """A store's menu at one step: the products on it, by number, with price and stock."""

    __slots__ = ("step", "next_number", "items")

    def __init__(self, step: int, next_number: int, items: dict[int, list[int]]) -> None:
        self.step = step
        self.next_number = next_number
        self.items = items  # number -> [price_cents, stock], in order of appearance

    def copy(self) -> _Menu:
        return _Menu(self.step, self.next_number, {n: list(v) for n, v in self.items.items()})


class Simulator:
    """The deterministic platform: stores and drifting menus from a seed and a clock (hours).

    Thread-safe: the server calls it from a thread per request.
    """

    def __init__(
        self,
        seed: int = DEFAULT_SEED,
        stores: int = DEFAULT_STORES,
        states: Iterable[str] | str = DEFAULT_STATES,
        platforms: Iterable[str] | str = DEFAULT_PLATFORMS,
        broken_image_share: float = 0.0,
        id_less_share: float = 0.0,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"the seed must be an integer, not {seed!r}")
        if (
            isinstance(broken_image_share, bool)
            or not isinstance(broken_image_share, (int, float))
            or not 0 <= broken_image_share <= 1
        ):
            raise ValueError(
                f"the broken image share must be a number from 0 to 1, not {broken_image_share!r}"
            )
        self.broken_image_share = float(broken_image_share)
        if (
            isinstance(id_less_share, bool)
            or not isinstance(id_less_share, (int, float))
            or not 0 <= id_less_share <= 1
        ):
            raise ValueError(f"the id-less share must be a number from 0 to 1, not {id_less_share!r}")
        self.id_less_share = float(id_less_share)
        if isinstance(stores, bool) or not isinstance(stores, int) or stores < 0:
            raise ValueError(f"the store count must be an integer >= 0, not {stores!r}")
        self.seed = seed
        self.states = _names(states, "state", _STATE_CODE, str.upper, "two letters, like AZ")
        self.platforms = _names(
            platforms, "platform", _PLATFORM_NAME, str.lower,
            "lowercase letters, digits, - and _, up to 40",
        )
        self._lock = threading.Lock()
        self._clock_hours = 0.0
        self._stores = self._make_stores(stores)
        self._by_id = {(s.platform, s.platform_store_id): s for s in self._stores}
        self._by_url = {(s.platform, s.menu_url): s for s in self._stores}
        self._products: dict[tuple[str, str, int], Product] = {}
        self._menus: dict[tuple[str, str], _Menu] = {}

    # The clock

    @property
    def clock_hours(self) -> float:
        with self._lock:
            return self._clock_hours

    @property
    def step(self) -> int:
        return step_of(self.clock_hours)

    def advance(self, hours: float) -> float:
        """Move the clock forward by `hours` (>= 0); the new clock."""
        if isinstance(hours, bool) or not isinstance(hours, (int, float)):
            raise ValueError(f"advance_hours must be a number, not {hours!r}")
        if not math.isfinite(hours):
            raise ValueError(f"advance_hours must be a number, not {hours!r}")
        if hours < 0:
            raise ValueError(f"the clock only moves forward: advance_hours {hours} < 0")
        with self._lock:
            clock = float(self._clock_hours + hours)
            if clock > MAX_CLOCK_HOURS:
                raise ValueError(
                    f"the clock stops at {MAX_CLOCK_HOURS} hours; it is at {self._clock_hours}"
                )
            self._clock_hours = clock
            return clock

    # Stores

    def _make_stores(self, count: int) -> list[Store]:
        late = sorted(
            range(count), key=lambda i: Draws(self.seed, "late", i).word()
        )[: round(count * LATE_STORE_SHARE)]
        late_set = set(late)
        ids: set[tuple[str, str]] = set()
        slugs: set[tuple[str, str]] = set()
        stores = []
        for i in range(count):
            platform = self.platforms[i % len(self.platforms)]
            state = self.states[(i // len(self.platforms)) % len(self.states)]
            draws = Draws(self.seed, "store", i)
            store_id = _store_id(platform, draws)
            while (platform, store_id) in ids:
                store_id = _store_id(platform, draws)
            ids.add((platform, store_id))
            name = f"{draws.choice(STORE_NAME_FIRST)} {draws.choice(STORE_NAME_SECOND)}"
            city = draws.choice(CITIES.get(state, OTHER_CITIES))
            base = slugify(f"{name} {city}")
            slug, n = base, 1
            while (platform, slug) in slugs:
                n += 1
                slug = f"{base}-{n}"
            slugs.add((platform, slug))
            opens = draws.randint(*LATE_OPENING_HOURS) if i in late_set else 0
            stores.append(
                Store(
                    index=i,
                    platform=platform,
                    platform_store_id=store_id,
                    name=name,
                    state=state,
                    city=city,
                    slug=slug,
                    menu_url=f"{MENU_URL_BASE}/{platform}/{slug}",
                    opens_at_hours=opens,
                )
            )
        return stores

    def check_platform(self, platform: str) -> None:
        if platform not in self.platforms:
            raise UnknownPlatform(platform)

    def all_stores(self) -> list[Store]:
        """Every store of every platform, open or not yet, in store order."""
        return list(self._stores)

    def stores(self, platform: str, state: str | None = None) -> list[Store]:
        """The platform's stores open now (in `state` when given), in store order."""
        self.check_platform(platform)
        clock = self.clock_hours
        wanted = state.upper() if state is not None else None
        return [
            s for s in self._stores
            if s.platform == platform and s.is_open(clock) and (wanted is None or s.state == wanted)
        ]

    def store(self, platform: str, platform_store_id: str) -> Store:
        """The platform's store by id, when it is open now."""
        self.check_platform(platform)
        store = self._by_id.get((platform, platform_store_id))
        if store is None or not store.is_open(self.clock_hours):
            raise UnknownStore(platform, f"no store {platform_store_id!r} on {platform}")
        return store

    def resolve(self, platform: str, menu_url: str) -> str:
        """The platform_store_id of the open store with this menu URL (a trailing / is ignored)."""
        self.check_platform(platform)
        url = menu_url.strip()
        store = self._by_url.get((platform, url)) or self._by_url.get((platform, url.rstrip("/")))
        if store is None or not store.is_open(self.clock_hours):
            raise UnknownStore(platform, f"no store on {platform} has the menu URL {menu_url!r}")
        return store.platform_store_id

    # Menus

    def menu(self, platform: str, platform_store_id: str) -> dict[str, Any]:
        """The open store's menu document at the current clock."""
        store = self.store(platform, platform_store_id)
        clock = self.clock_hours
        return self.menu_at(store, clock)

    def menu_at(self, store: Store, clock_hours: float) -> dict[str, Any]:
        """The store's menu document at `clock_hours` (open or not; for tests and tools)."""
        menu = self._menu_state(store, step_of(clock_hours))
        products = []
        for number, (price_cents, stock) in menu.items.items():
            product = self._product(store, number)
            products.append(
                {
                    "id": None if self._is_id_less(store, number) else product.id,
                    "name": product.name,
                    "brand": product.brand,
                    "category": product.category,
                    "size": product.size,
                    "price": price_cents / 100,
                    "stock": stock,
                    "image_url": (
                        None if product.image is None
                        else f"/platforms/{store.platform}/images/{product.image}"
                    ),
                }
            )
        return {
            "platform": store.platform,
            "platform_store_id": store.platform_store_id,
            "clock_hours": float(clock_hours),
            "products": products,
        }

    def _is_id_less(self, store: Store, number: int) -> bool:
        """Whether the menus list product `number` without its id: see the module docstring."""
        if not self.id_less_share:
            return False
        draws = Draws(self.seed, "id-less", store.platform, store.platform_store_id, number)
        return draws.random() < self.id_less_share

    def _menu_state(self, store: Store, step: int) -> _Menu:
        key = (store.platform, store.platform_store_id)
        with self._lock:
            menu = self._menus.get(key)
            if menu is None or menu.step > step:
                menu = self._first_menu(store)
            else:
                menu = menu.copy()
            while menu.step < step:
                self._next_step(store, menu)
            cached = self._menus.get(key)
            if cached is None or cached.step <= menu.step:
                self._menus[key] = menu
            return menu.copy()

    def _first_menu(self, store: Store) -> _Menu:
        count = Draws(self.seed, "menu-size", store.platform, store.platform_store_id).randint(
            MENU_MIN_PRODUCTS, MENU_MAX_PRODUCTS
        )
        items = {}
        for number in range(count):
            product = self._product(store, number)
            items[number] = [product.first_price_cents, product.first_stock]
        return _Menu(0, count, items)

    def _next_step(self, store: Store, menu: _Menu) -> None:
        step = menu.step + 1
        for number in list(menu.items):
            draws = Draws(self.seed, "step", store.platform, store.platform_store_id, number, step)
            if draws.random() < DISAPPEAR_RATE:
                del menu.items[number]
                # Gone for good: on no later menu (an earlier one makes it again, the same).
                self._products.pop((store.platform, store.platform_store_id, number), None)
                continue
            item = menu.items[number]
            if draws.random() < PRICE_CHANGE_RATE:
                low, high = PRICE_CHANGE_PCT
                pct = low + (high - low) * draws.random()
                up = draws.random() < PRICE_UP_SHARE
                price = max(MIN_PRICE_CENTS, round(item[0] * (1 + pct if up else 1 - pct)))
                if price == item[0]:
                    price = item[0] + 1
                item[0] = price
            if draws.random() < STOCK_CHANGE_RATE:
                if item[1] == 0:
                    item[1] = draws.randint(5, 40)
                else:
                    delta = draws.randint(-15, 9)
                    delta += delta >= 0  # -15..-1, 1..10
                    item[1] = max(0, item[1] + delta)
        arrivals = Draws(self.seed, "arrivals", store.platform, store.platform_store_id, step)
        count = len(menu.items)
        new = arrivals.randint(0, MAX_NEW_PRODUCTS)
        new = min(max(new, MENU_MIN_PRODUCTS - count), max(0, MENU_MAX_PRODUCTS - count))
        for _ in range(new):
            product = self._product(store, menu.next_number)
            menu.items[menu.next_number] = [product.first_price_cents, product.first_stock]
            menu.next_number += 1
        menu.step = step

    def _product(self, store: Store, number: int) -> Product:
        key = (store.platform, store.platform_store_id, number)
        product = self._products.get(key)
        if product is None:
            draws = Draws(self.seed, "product", store.platform, store.platform_store_id, number)
            category = draws.choice(CATEGORY_NAMES)
            words, forms = CATEGORIES[category]
            form, low, high = draws.choice(forms)
            dollars = draws.randint(low, high)
            cents = dollars * 100 - (1 if draws.random() < 0.5 else 0)
            stock = 0 if draws.random() < 0.10 else draws.randint(1, 40)
            product_id = draws.hex(16)
            name = f"{draws.choice(words)} {form}"
            brand = draws.choice(BRANDS)
            product = Product(
                number=number,
                id=product_id,
                name=name,
                brand=brand,
                category=category,
                size=_size_of(form),
                first_price_cents=cents,
                first_stock=stock,
                image=self._image_of(category, brand, name),
            )
            self._products[key] = product
        return product

    # Images

    def _image_of(self, category: str, brand: str, name: str) -> str | None:
        """The image file name of a product (brand and name), or None: see the module docstring."""
        draws = Draws(self.seed, "image", brand, name)
        if draws.random() < NO_IMAGE_SHARE:
            return None
        return f"{slugify(category)}-{draws.randint(0, IMAGES_PER_CATEGORY - 1)}.png"

    def image(self, platform: str, name: str) -> bytes:
        """The PNG bytes of the image `name` (e.g. flower-3.png); UnknownImage when there is none."""
        self.check_platform(platform)
        found = _IMAGE_NAME.match(name)
        if (
            found is None
            or found["category"] not in _CATEGORY_SLUGS
            or int(found["number"]) >= IMAGES_PER_CATEGORY
        ):
            raise UnknownImage(platform, name)
        draws = Draws(self.seed, "image-pixels", name)
        colours = [bytes(draws.randint(0, 255) for _ in range(3)) for _ in range(2)]
        return png(IMAGE_PIXELS, IMAGE_PIXELS, lambda x, y: colours[(x // 4 + y // 4) % 2])

    def broken_image(self, name: str) -> str | None:
        """How the image `name` is broken (one of BROKEN_IMAGE_KINDS), or None when it is not."""
        draws = Draws(self.seed, "broken-image", name)
        if draws.random() >= self.broken_image_share:
            return None
        return draws.choice(BROKEN_IMAGE_KINDS)

    # The admin view

    def summary(self) -> dict[str, Any]:
        """Clock, platforms, states and store counts (total and open now, by platform and state)."""
        clock = self.clock_hours
        counts: dict[str, Any] = {}
        for platform in self.platforms:
            by_state = {state: {"total": 0, "open": 0} for state in self.states}
            counts[platform] = {"total": 0, "open": 0, "by_state": by_state}
        upcoming = [s.opens_at_hours for s in self._stores if not s.is_open(clock)]
        for store in self._stores:
            is_open = int(store.is_open(clock))
            for bucket in (counts[store.platform], counts[store.platform]["by_state"][store.state]):
                bucket["total"] += 1
                bucket["open"] += is_open
        return {
            "seed": self.seed,
            "clock_hours": clock,
            "clock_step": step_of(clock),
            "step_hours": STEP_HOURS,
            "platforms": list(self.platforms),
            "states": list(self.states),
            "stores": counts,
            "next_opening_hours": min(upcoming) if upcoming else None,
        }


_IMAGE_NAME = re.compile(r"^(?P<category>[a-z-]+)-(?P<number>[0-9]{1,3})\.png$")
_CATEGORY_SLUGS = frozenset(slugify(category) for category in CATEGORY_NAMES)


def png(width: int, height: int, pixel: Any) -> bytes:
    """A truecolour PNG of width x height whose pixel(x, y) gives each pixel's RGB bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    rows = b"".join(
        b"\x00" + b"".join(pixel(x, y) for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


_SIZE = re.compile(r"\b[0-9]+(?:\.[0-9]+)?(?:g|mg|ml|oz)\b")


def _size_of(form: str) -> str | None:
    """The amount a product form names ("1g" of "1g Pre-Roll"), or None."""
    found = _SIZE.search(form)
    return found.group(0) if found else None


def step_of(clock_hours: float) -> int:
    """The menu step of a clock: floor(hours / STEP_HOURS)."""
    return int(clock_hours // STEP_HOURS)


def _names(
    values: Iterable[str] | str, what: str, pattern: re.Pattern[str], normal: Any, rule: str
) -> tuple[str, ...]:
    """A list option (or a comma-separated string) as a tuple of checked, distinct names."""
    if isinstance(values, str):
        values = values.split(",")
    names: list[str] = []
    for value in values:
        name = normal(str(value).strip())
        if not pattern.match(name):
            raise ValueError(f"bad {what} {value!r}: {rule}")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError(f"at least one {what} is needed")
    return tuple(names)
