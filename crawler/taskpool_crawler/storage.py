"""The raw menus, gzip-compressed, in a local directory or an S3-compatible bucket: saved by
product_discovery and product_resync, loaded by product_refresh (which never asks the network
of a platform), removed by retention.

The storage is one setting, $TASKPOOL_STORAGE: a local directory (a path, or a `file://` URL)
or a bucket, `s3://bucket[/prefix]`. $TASKPOOL_STORAGE_DIR, its older name, still names a local
directory; with neither, `./storage` (relative to the worker's working directory). A bucket is
reached with boto3: its endpoint is AWS's unless $AWS_ENDPOINT_URL names another server (MinIO,
Ceph, moto), and its credentials come from boto3's standard chain (the environment,
~/.aws/credentials, an instance or pod role). The store is chosen once per setting
(`current_store`); everything that reads, writes or removes payloads goes through it.

Keys are relative to the storage root, '/'-separated: a key that is absolute, has a `..`, `.` or
empty segment, a backslash or a control character is refused (StorageKeyRefused) before any
file or request, on either backend. A payload lives at
`payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz` (the day and time of the fetch, UTC; `<ts>` to the
microsecond, so a store's crawls never share a key), and a payload key outside `payloads/` is
refused too; raw_crawl_payloads.storage_path holds the key, so the storage can move (another
directory, a bucket holding the same keys) without touching the rows.

An object is written whole or not at all: a file into a temporary file beside it, flushed to
disk, then renamed; an S3 PUT, which creates the object only when its whole body arrived. A
payload is written before its row is recorded (record_crawl_payload), so a row always names
stored bytes; the reverse, an object whose row never came (a worker killed in between), is what
`sweep_unrecorded_payloads` removes once it is older than a grace period. Its size and sha256
are those of the object as stored (the compressed bytes); the compression is deterministic (no
timestamp in the gzip header), so the same menu gives the same object.

Reading trusts no row: besides the key checks, a local file is read only when, symlinks
resolved, it lies inside the storage directory and is a regular file (`/dev/zero`, a symlink
out of the directory, a FIFO are refused); an object is read to at most MAX_PAYLOAD_FILE_BYTES
(16 MiB) stored (from S3 a ranged GET, never the whole object), decompressing to at most
MAX_PAYLOAD_BODY_BYTES (64 MiB); past either bound (a gzip bomb) PayloadFileTooLarge, read no
further.

Removing follows the payload_files_to_remove outbox: a payload goes only after its row went; an
object already gone counts as removed.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import os
import re
import stat
import tempfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import unquote, urlparse

STORAGE_ENV = "TASKPOOL_STORAGE"
STORAGE_DIR_ENV = "TASKPOOL_STORAGE_DIR"
DEFAULT_STORAGE_DIR = "storage"
PAYLOADS_PREFIX = "payloads/"
IMAGES_PREFIX = "images/"
# images/<first two hex digits>/<sha256>.<extension>: content-addressed, as product_images checks.
_IMAGE_KEY = re.compile(r"images/([0-9a-f]{2})/\1[0-9a-f]{62}\.(png|jpg|gif)")
COMPRESS_LEVEL = 6
# The most a payload may hold stored, and decompressed: a menu is well under a megabyte;
# anything past these is refused unread (the rest of the object is never read or inflated).
MAX_PAYLOAD_FILE_BYTES = 16 * 1024 * 1024
MAX_PAYLOAD_BODY_BYTES = 64 * 1024 * 1024
# S3 keys are at most 1024 bytes; a local path no longer than that either.
MAX_KEY_BYTES = 1024
# How long an object may go without its row before the sweep removes it: far longer than a
# crawl takes from its upload to record_crawl_payload (a database call, under a second).
DEFAULT_SWEEP_GRACE = timedelta(hours=6)
# How many keys the sweep asks the database about at once.
SWEEP_BATCH = 500

_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


class StorageKeyRefused(Exception):
    """A key the storage never reads, writes or removes: outside its root or malformed."""

    def __init__(self, key: str, reason: str, verb: str = "used") -> None:
        super().__init__(f"storage key {key!r} {reason}: not {verb}")
        self.key = key
        self.reason = reason


class StorageUnavailable(Exception):
    """The storage did not answer as it should (a bucket's server unreachable, a connection cut,
    a request refused): nothing can be told of the object; worth trying again."""


class StoredObjectMissing(Exception):
    """No object under the key."""

    def __init__(self, location: str) -> None:
        super().__init__(f"{location} does not exist")
        self.location = location


class StoredObjectTooLarge(Exception):
    """An object larger than the reader's bound: refused unread."""

    def __init__(self, location: str, size: int, max_bytes: int) -> None:
        super().__init__(f"{location} is {size} bytes, over the {max_bytes} bytes allowed: refused unread")
        self.location = location
        self.size = size


class PayloadFileMissing(StoredObjectMissing):
    """A payload's object is not where its row says: it was deleted, or the storage is not the
    one the crawl wrote to."""

    def __init__(self, location: str) -> None:
        Exception.__init__(
            self,
            f"payload file {location} does not exist (is {STORAGE_ENV} the storage the crawl"
            " saved it to?)",
        )
        self.location = location


class PayloadFileCorrupt(Exception):
    """A payload cannot be read back: not gzip, cut short, or not the recorded bytes."""


class PayloadFileTooLarge(PayloadFileCorrupt):
    """A payload is over MAX_PAYLOAD_FILE_BYTES stored, or decompresses past
    MAX_PAYLOAD_BODY_BYTES."""


class PayloadPathRefused(StorageKeyRefused):
    """A storage_path that is not a payload inside the storage: never read or removed."""

    def __init__(self, key: str, reason: str, verb: str = "read") -> None:
        Exception.__init__(self, f"payload path {key!r} {reason}: not {verb}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class StoredObject:
    """One object as a listing shows it."""

    key: str  # relative to the storage root
    size_bytes: int
    modified_at: datetime  # aware, UTC


@dataclass(frozen=True)
class SavedPayload:
    """A payload as written: what record_crawl_payload takes."""

    storage_path: str  # the key, relative to the storage root
    location: str  # where it is, for people: a path or an s3:// URL
    size_bytes: int
    sha256: str


def key_refusal(key: object) -> str | None:
    """Why `key` is no storage key (a phrase after the key), or None when it is one."""
    if not isinstance(key, str) or key == "":
        return "is not a key (a relative path, '/'-separated)"
    if key.startswith("/") or any(part == ".." for part in key.split("/")):
        return "is outside the storage"
    if "\\" in key or _CONTROL_CHARACTER.search(key):
        return "holds a backslash or a control character"
    if any(part in ("", ".") for part in key.split("/")):
        return "has an empty or '.' segment"
    if len(key.encode()) > MAX_KEY_BYTES:
        return f"is longer than {MAX_KEY_BYTES} bytes"
    return None


class ObjectStore(ABC):
    """Where objects live, by key relative to the root: a local directory or a bucket."""

    # For messages: "directory /srv/storage" or "bucket s3://name/prefix".
    description: str

    def checked(self, key: str, verb: str) -> str:
        """`key` when it is a storage key, else StorageKeyRefused naming the root."""
        reason = key_refusal(key)
        if reason == "is outside the storage":
            reason = f"is outside the storage {self.description}"
        if reason is not None:
            raise StorageKeyRefused(str(key), reason, verb)
        return key

    @abstractmethod
    def location(self, key: str) -> str:
        """Where `key` is, for people: a path or an s3:// URL."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, whole or not at all."""

    @abstractmethod
    def get(self, key: str, max_bytes: int) -> bytes:
        """The object's bytes; StoredObjectMissing, StoredObjectTooLarge past `max_bytes` (read
        no further), StorageKeyRefused. A bucket's failures are StorageUnavailable (retryable),
        as they are for the other methods."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether an object is stored under `key`."""

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Remove the object; whether it was there (one already gone counts as removed)."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[StoredObject]:
        """The objects whose keys start with `prefix` ('payloads/')."""


class LocalStorage(ObjectStore):
    """A directory: keys are paths under it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.description = f"directory {self.root.resolve()}"

    def location(self, key: str) -> str:
        return str(self.root / key)

    def _inside(self, key: str, verb: str, follow_last: bool) -> Path:
        """The path of `key`, symlinks resolved (all, or all but the last component), refused
        when that escapes the directory."""
        path = self.root / self.checked(key, verb)
        real_root = self.root.resolve()
        real_path = path.resolve() if follow_last else path.parent.resolve() / path.name
        if not real_path.is_relative_to(real_root):
            raise StorageKeyRefused(key, f"is outside the storage directory {real_root}", verb)
        return real_path

    def put(self, key: str, data: bytes) -> None:
        path = self._inside(key, "written", follow_last=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def get(self, key: str, max_bytes: int) -> bytes:
        real_path = self._inside(key, "read", follow_last=True)
        try:
            # O_NONBLOCK: opening a FIFO does not wait for a writer; O_NOFOLLOW: the file
            # resolved above is not swapped for a symlink in between.
            handle = os.open(real_path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError as error:
            raise StoredObjectMissing(self.location(key)) from error
        with os.fdopen(handle, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise StorageKeyRefused(key, f"at {self.location(key)} is not a regular file", "read")
            if info.st_size > max_bytes:
                raise StoredObjectTooLarge(self.location(key), info.st_size, max_bytes)
            data = file.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise StoredObjectTooLarge(self.location(key), len(data), max_bytes)
        return data

    def exists(self, key: str) -> bool:
        return self._inside(key, "looked up", follow_last=True).is_file()

    def delete(self, key: str) -> bool:
        # The directory's symlinks resolved, not the file's own: a link is unlinked, not followed.
        real_path = self._inside(key, "removed", follow_last=False)
        try:
            real_path.unlink()
        except FileNotFoundError:
            return False
        return True

    def list(self, prefix: str) -> Iterator[StoredObject]:
        top = self.root / prefix
        # Symlinked directories are not followed: what the sweep lists lies inside the root.
        for directory, _, files in os.walk(top):
            for name in files:
                path = Path(directory) / name
                try:
                    info = path.lstat()
                except FileNotFoundError:
                    continue
                yield StoredObject(
                    key=path.relative_to(self.root).as_posix(),
                    size_bytes=info.st_size,
                    modified_at=datetime.fromtimestamp(info.st_mtime, timezone.utc),
                )


class S3Storage(ObjectStore):
    """A bucket, or a prefix in one, of an S3-compatible server, through boto3."""

    def __init__(self, bucket: str, prefix: str = "", client: object | None = None) -> None:
        import boto3  # only a fleet on a bucket needs it loaded

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.description = f"bucket s3://{bucket}{'/' + self.prefix if self.prefix else ''}"
        # The endpoint ($AWS_ENDPOINT_URL) and credentials come from boto3's standard chain.
        self.client = client if client is not None else boto3.client("s3")

    def _name(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def location(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._name(key)}"

    @staticmethod
    def _code(error: Exception) -> str:
        return str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))

    @contextmanager
    def _reaching(self, what: str) -> Iterator[None]:
        """boto3's errors not handled where they arise, as StorageUnavailable naming `what`."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (BotoCoreError, ClientError) as error:
            raise StorageUnavailable(f"{what}: {error}") from error

    def put(self, key: str, data: bytes) -> None:
        name = self._name(self.checked(key, "written"))
        with self._reaching(f"storing {self.location(key)}"):
            self.client.put_object(Bucket=self.bucket, Key=name, Body=data)

    def get(self, key: str, max_bytes: int) -> bytes:
        with self._reaching(f"reading {self.location(self.checked(key, 'read'))}"):
            return self._get(key, max_bytes)

    def _get(self, key: str, max_bytes: int) -> bytes:
        from botocore.exceptions import ClientError

        name = self._name(key)
        try:
            # One byte past the bound: enough to tell an object over it, never the whole of one.
            response = self.client.get_object(Bucket=self.bucket, Key=name, Range=f"bytes=0-{max_bytes}")
        except ClientError as error:
            code = self._code(error)
            if code in ("NoSuchKey", "404", "NotFound"):
                raise StoredObjectMissing(self.location(key)) from error
            if code == "InvalidRange":
                # Only an empty object has no byte 0.
                return b""
            raise
        body = response["Body"]
        try:
            size = _total_size(response)
            if size > max_bytes:
                raise StoredObjectTooLarge(self.location(key), size, max_bytes)
            data = body.read(max_bytes + 1)
        finally:
            body.close()
        if len(data) > max_bytes:
            raise StoredObjectTooLarge(self.location(key), len(data), max_bytes)
        return data

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        name = self._name(self.checked(key, "looked up"))
        with self._reaching(f"looking up {self.location(key)}"):
            try:
                self.client.head_object(Bucket=self.bucket, Key=name)
            except ClientError as error:
                if self._code(error) in ("NoSuchKey", "404", "NotFound"):
                    return False
                raise
        return True

    def delete(self, key: str) -> bool:
        # S3's DELETE answers alike whether the object was there: ask first, to count.
        existed = self.exists(self.checked(key, "removed"))
        if existed:
            with self._reaching(f"removing {self.location(key)}"):
                self.client.delete_object(Bucket=self.bucket, Key=self._name(key))
        return existed

    def list(self, prefix: str) -> Iterator[StoredObject]:
        strip = len(self.prefix) + 1 if self.prefix else 0
        with self._reaching(f"listing {self.location(prefix)}"):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self._name(prefix)
            )
            for page in pages:
                for entry in page.get("Contents", []):
                    yield StoredObject(
                        key=entry["Key"][strip:],
                        size_bytes=entry["Size"],
                        modified_at=entry["LastModified"].astimezone(timezone.utc),
                    )


def _total_size(response: dict) -> int:
    """The whole object's size from a ranged GET's Content-Range ('bytes 0-99/1234')."""
    content_range = response.get("ContentRange") or ""
    total = content_range.rpartition("/")[2]
    return int(total) if total.isdigit() else int(response.get("ContentLength", 0))


def store_from_setting(setting: str) -> ObjectStore:
    """The store a $TASKPOOL_STORAGE value names: `s3://bucket[/prefix]`, `file:///path` or a
    path. ValueError for another scheme or a bucket URL without a bucket."""
    if setting.startswith("s3://"):
        parsed = urlparse(setting)
        if not parsed.netloc or parsed.query or parsed.fragment:
            raise ValueError(f"{STORAGE_ENV}={setting!r}: a bucket URL is s3://bucket[/prefix]")
        prefix = parsed.path.strip("/")
        if prefix and key_refusal(prefix) is not None:
            raise ValueError(f"{STORAGE_ENV}={setting!r}: the prefix {prefix!r} {key_refusal(prefix)}")
        return S3Storage(parsed.netloc, prefix)
    if setting.startswith("file://"):
        parsed = urlparse(setting)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"{STORAGE_ENV}={setting!r}: a file URL names a local path, file:///path")
        return LocalStorage(Path(unquote(parsed.path)))
    if "://" in setting:
        raise ValueError(
            f"{STORAGE_ENV}={setting!r}: storage is a directory, file:///path or s3://bucket[/prefix]"
        )
    return LocalStorage(Path(setting))


def storage_setting() -> str:
    """$TASKPOOL_STORAGE, else $TASKPOOL_STORAGE_DIR (its older name), else ./storage."""
    return os.environ.get(STORAGE_ENV) or os.environ.get(STORAGE_DIR_ENV) or DEFAULT_STORAGE_DIR


@functools.cache
def _store_for(setting: str) -> ObjectStore:
    return store_from_setting(setting)


def current_store() -> ObjectStore:
    """The store the environment names, made once per setting (a bucket's client is reused)."""
    return _store_for(storage_setting())


def store_object(key: str, data: bytes, store: ObjectStore | None = None) -> None:
    """Store `data` under `key` (relative to the storage root), whole or not at all."""
    (store or current_store()).put(key, data)


def load_object(key: str, max_bytes: int, store: ObjectStore | None = None) -> bytes:
    """The bytes under `key`: StoredObjectMissing, StoredObjectTooLarge past `max_bytes` (read
    no further), StorageKeyRefused for a key outside the storage or malformed."""
    return (store or current_store()).get(key, max_bytes)


def object_exists(key: str, store: ObjectStore | None = None) -> bool:
    """Whether an object is stored under `key`."""
    return (store or current_store()).exists(key)


def remove_object(key: str, store: ObjectStore | None = None) -> bool:
    """Remove the object under `key`; whether it was there (gone already counts as removed)."""
    return (store or current_store()).delete(key)


def locate(storage_path: str, store: ObjectStore | None = None) -> str:
    """Where a stored payload is, for people: a path or an s3:// URL."""
    return (store or current_store()).location(storage_path)


def payload_storage_path(dispensary_id: int, fetched_at: datetime) -> str:
    """payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz for a fetch at `fetched_at` (made UTC)."""
    if fetched_at.tzinfo is None:
        raise ValueError("fetched_at must carry a time zone")
    utc = fetched_at.astimezone(timezone.utc)
    stamp = utc.strftime("%Y%m%dT%H%M%S%fZ")
    return f"{PAYLOADS_PREFIX}{utc:%Y/%m/%d}/store_{dispensary_id}_{stamp}.json.gz"


def _payload_key(storage_path: str, store: ObjectStore, verb: str) -> str:
    """`storage_path` when it is a payload key; PayloadPathRefused otherwise."""
    reason = key_refusal(storage_path)
    if reason == "is outside the storage":
        reason = f"is outside the storage {store.description}"
    elif reason is None and not storage_path.startswith(PAYLOADS_PREFIX):
        reason = f"is not under {PAYLOADS_PREFIX} (the payload layout)"
    if reason is not None:
        raise PayloadPathRefused(str(storage_path), reason, verb)
    return storage_path


def save_payload(
    body: bytes, dispensary_id: int, fetched_at: datetime, store: ObjectStore | None = None
) -> SavedPayload:
    """Store `body` gzip-compressed for the store's fetch at `fetched_at`; whole or not at all."""
    store = store or current_store()
    storage_path = payload_storage_path(dispensary_id, fetched_at)
    data = gzip.compress(body, compresslevel=COMPRESS_LEVEL, mtime=0)
    store.put(storage_path, data)
    return SavedPayload(
        storage_path=storage_path,
        location=store.location(storage_path),
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def load_payload(storage_path: str, sha256: str | None = None, store: ObjectStore | None = None) -> bytes:
    """The raw body of a stored payload.

    PayloadPathRefused when the key is not a payload inside the storage (or, on disk, not a
    regular file); PayloadFileMissing when it is not there; PayloadFileTooLarge past the size
    bounds; PayloadFileCorrupt when it does not match `sha256` (when given) or does not
    decompress.
    """
    store = store or current_store()
    key = _payload_key(storage_path, store, "read")
    location = store.location(key)
    try:
        data = store.get(key, MAX_PAYLOAD_FILE_BYTES)
    except StoredObjectMissing as error:
        raise PayloadFileMissing(location) from error
    except StorageKeyRefused as error:
        raise PayloadPathRefused(storage_path, error.reason) from error
    except StoredObjectTooLarge as error:
        raise PayloadFileTooLarge(
            f"payload file {location} is {error.size} bytes, over the {MAX_PAYLOAD_FILE_BYTES}"
            " bytes (MAX_PAYLOAD_FILE_BYTES) a payload file may be: refused unread"
        ) from error
    if sha256 is not None:
        found = hashlib.sha256(data).hexdigest()
        if found != sha256.lower():
            raise PayloadFileCorrupt(
                f"payload file {location} has sha256 {found}, not the recorded {sha256.lower()}:"
                " it changed after it was saved"
            )
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as compressed:
            body = compressed.read(MAX_PAYLOAD_BODY_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise PayloadFileCorrupt(f"payload file {location} does not decompress: {error}") from error
    if len(body) > MAX_PAYLOAD_BODY_BYTES:
        raise PayloadFileTooLarge(
            f"payload file {location} decompresses to more than {MAX_PAYLOAD_BODY_BYTES} bytes"
            " (MAX_PAYLOAD_BODY_BYTES): refused, a gzip bomb or not a menu"
        )
    return body


def remove_payload(storage_path: str, store: ObjectStore | None = None) -> bool:
    """Remove a stored payload, once its row is gone (retention); whether it was there.

    An object already gone counts as removed: a run that crashed after the removal and before
    forgetting the path runs again. PayloadPathRefused, as for reading, when the key is not a
    payload inside the storage: nothing outside it is ever removed. A symlink inside a
    directory is removed itself, never its target.
    """
    store = store or current_store()
    key = _payload_key(storage_path, store, "removed")
    try:
        return store.delete(key)
    except StorageKeyRefused as error:
        raise PayloadPathRefused(storage_path, error.reason, "removed") from error


def image_storage_key(sha256: str, extension: str) -> str:
    """images/<first two hex digits>/<sha256>.<extension>: where a product image's bytes go."""
    return f"{IMAGES_PREFIX}{sha256[:2]}/{sha256}.{extension}"


def remove_image(storage_key: str, store: ObjectStore | None = None) -> bool:
    """Remove a stored product image, once its row is gone (retention); whether it was there.

    As remove_payload: gone counts as removed, and PayloadPathRefused for a key that is not an
    image of the content-addressed layout inside the storage.
    """
    store = store or current_store()
    reason = key_refusal(storage_key)
    if reason is None and not _IMAGE_KEY.fullmatch(storage_key):
        reason = "is not images/<2 hex>/<sha256>.<png|jpg|gif> (the image layout)"
    if reason is not None:
        raise PayloadPathRefused(str(storage_key), reason, "removed")
    try:
        return store.delete(storage_key)
    except StorageKeyRefused as error:
        raise PayloadPathRefused(storage_key, error.reason, "removed") from error


def sweep_unrecorded_payloads(
    unrecorded: Callable[[list[str]], list[str]],
    older_than: timedelta = DEFAULT_SWEEP_GRACE,
    store: ObjectStore | None = None,
    now: datetime | None = None,
) -> dict[str, int]:
    """Remove the objects under payloads/ older than `older_than` that no payload row names.

    `unrecorded` takes a batch of keys and returns those without a row (the database's
    unrecorded_payload_paths). An object younger than the grace may still be waiting for its
    row (written, not yet recorded), so it stays; a local directory's leftover temporary files
    (a writer killed before its rename) have no row either and go the same way. Returns how
    many objects were looked at (old enough) and removed.
    """
    store = store or current_store()
    cutoff = (now or datetime.now(timezone.utc)) - older_than
    counts = {"examined": 0, "removed": 0}

    def remove_unrecorded(batch: list[str]) -> None:
        for key in unrecorded(batch):
            try:
                if store.delete(key):
                    counts["removed"] += 1
            except StorageKeyRefused:
                # Listed through a symlinked directory that leads out of the storage: never
                # removed, and the rest of the sweep goes on.
                continue

    batch: list[str] = []
    for stored in store.list(PAYLOADS_PREFIX):
        if stored.modified_at >= cutoff or key_refusal(stored.key) is not None:
            continue
        counts["examined"] += 1
        batch.append(stored.key)
        if len(batch) == SWEEP_BATCH:
            remove_unrecorded(batch)
            batch = []
    if batch:
        remove_unrecorded(batch)
    return counts
