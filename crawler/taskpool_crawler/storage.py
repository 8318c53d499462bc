"""The raw menus, gzip-compressed on disk: saved by product_discovery and product_resync, loaded
by product_refresh (which never asks the network).

A payload lives at `<storage dir>/payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz` (the day and
time of the fetch, UTC; `<ts>` to the microsecond, so a store's crawls never share a name).
The storage directory is $TASKPOOL_STORAGE_DIR, by default `./storage` (relative to the
worker's working directory); raw_crawl_payloads.storage_path holds the path relative to it, so
the directory can move, or be mounted elsewhere on another host, without touching the rows.

A file is written whole or not at all: into a temporary file beside it, flushed to disk, then
renamed. Its size and sha256 are those of the file as stored (the compressed bytes); the
compression is deterministic (no timestamp in the gzip header), so the same menu gives the
same file.

Reading trusts no row: a storage_path is read only when, symlinks resolved, it lies inside the
storage directory and is a regular file (PayloadPathRefused otherwise: `/dev/zero`,
`../../etc/shadow`, a symlink out of the directory, a FIFO), of at most MAX_PAYLOAD_FILE_BYTES
(16 MiB) on disk, decompressing to at most MAX_PAYLOAD_BODY_BYTES (64 MiB); a file over either
bound (a gzip bomb) is PayloadFileTooLarge, read no further.

Removing (remove_payload) follows the payload_files_to_remove outbox: a file goes only after its
row went, and only from inside the storage directory.

Objects (store_object, load_object, object_exists, remove_object) are any file under the storage
directory by its key, relative to it, with the same guarantees: the product images live there at
content-addressed keys, `images/ab/abcdef….png`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

STORAGE_DIR_ENV = "TASKPOOL_STORAGE_DIR"
DEFAULT_STORAGE_DIR = "storage"
COMPRESS_LEVEL = 6
# The most a payload file may hold on disk, and decompressed: a menu is well under a megabyte;
# anything past these is refused unread (the rest of the file is never read or inflated).
MAX_PAYLOAD_FILE_BYTES = 16 * 1024 * 1024
MAX_PAYLOAD_BODY_BYTES = 64 * 1024 * 1024


class PayloadFileMissing(Exception):
    """A payload's file is not where its row says: it was deleted or the storage directory is
    not the one the crawl wrote to."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"payload file {path} does not exist (is {STORAGE_DIR_ENV} the directory the crawl"
            " saved it to?)"
        )
        self.path = path


class PayloadFileCorrupt(Exception):
    """A payload's file cannot be read back: not gzip, cut short, or not the recorded bytes."""


class PayloadFileTooLarge(PayloadFileCorrupt):
    """A payload's file is over MAX_PAYLOAD_FILE_BYTES, or decompresses past
    MAX_PAYLOAD_BODY_BYTES."""


class PayloadPathRefused(Exception):
    """A storage_path that is not a regular file inside the storage directory: never read."""


@dataclass(frozen=True)
class SavedPayload:
    """A payload file as written: what record_crawl_payload takes."""

    storage_path: str  # relative to the storage directory, '/'-separated
    path: Path  # where it is now
    size_bytes: int
    sha256: str


def storage_dir() -> Path:
    """The storage directory: $TASKPOOL_STORAGE_DIR, else ./storage."""
    return Path(os.environ.get(STORAGE_DIR_ENV) or DEFAULT_STORAGE_DIR)


def payload_storage_path(dispensary_id: int, fetched_at: datetime) -> str:
    """payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz for a fetch at `fetched_at` (made UTC)."""
    if fetched_at.tzinfo is None:
        raise ValueError("fetched_at must carry a time zone")
    utc = fetched_at.astimezone(timezone.utc)
    stamp = utc.strftime("%Y%m%dT%H%M%S%fZ")
    return f"payloads/{utc:%Y/%m/%d}/store_{dispensary_id}_{stamp}.json.gz"


def resolve(storage_path: str, root: Path | None = None) -> Path:
    """Where a stored payload is: `storage_path` under the storage directory (an absolute path
    stays as it is)."""
    return (root if root is not None else storage_dir()) / storage_path


def save_payload(
    body: bytes, dispensary_id: int, fetched_at: datetime, root: Path | None = None
) -> SavedPayload:
    """Write `body` gzip-compressed for the store's fetch at `fetched_at`; atomically."""
    storage_path = payload_storage_path(dispensary_id, fetched_at)
    path = resolve(storage_path, root)
    data = gzip.compress(body, compresslevel=COMPRESS_LEVEL, mtime=0)
    _write_atomically(path, data)
    return SavedPayload(
        storage_path=storage_path,
        path=path,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def load_payload(storage_path: str, sha256: str | None = None, root: Path | None = None) -> bytes:
    """The raw body of a stored payload.

    PayloadPathRefused when the path is not a regular file inside the storage directory;
    PayloadFileMissing when the file is not there; PayloadFileTooLarge past the size bounds;
    PayloadFileCorrupt when it does not match `sha256` (when given) or does not decompress.
    """
    path = resolve(storage_path, root)
    real_path = _inside_storage(storage_path, root, "payload path", "not read")
    data = _read_regular_file(real_path, path, MAX_PAYLOAD_FILE_BYTES, "payload path", _too_large)
    if sha256 is not None:
        found = hashlib.sha256(data).hexdigest()
        if found != sha256.lower():
            raise PayloadFileCorrupt(
                f"payload file {path} has sha256 {found}, not the recorded {sha256.lower()}:"
                " it changed after it was saved"
            )
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as compressed:
            body = compressed.read(MAX_PAYLOAD_BODY_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise PayloadFileCorrupt(f"payload file {path} does not decompress: {error}") from error
    if len(body) > MAX_PAYLOAD_BODY_BYTES:
        raise PayloadFileTooLarge(
            f"payload file {path} decompresses to more than {MAX_PAYLOAD_BODY_BYTES} bytes"
            " (MAX_PAYLOAD_BODY_BYTES): refused, a gzip bomb or not a menu"
        )
    return body


def remove_payload(storage_path: str, root: Path | None = None) -> bool:
    """Remove a stored payload's file, once its row is gone (retention); whether it was there.

    A file already gone counts as removed: a run that crashed after the unlink and before
    forgetting the path runs again. PayloadPathRefused, as for reading, when the path is not
    inside the storage directory: nothing outside it is ever removed. A symlink inside it is
    removed itself, never its target.
    """
    # The directory's symlinks resolved, not the file's own: a link is unlinked, not followed.
    real_path = _inside_storage(
        storage_path, root, "payload path", "not removed", follow_last_link=False
    )
    try:
        real_path.unlink()
    except FileNotFoundError:
        return False
    return True


# Objects: any file under the storage directory by its key (a '/'-separated path relative to
# it), as the content-addressed images use them. The same guarantees as the payloads': written
# whole or not at all, read and removed only inside the storage directory.


def store_object(key: str, data: bytes, root: Path | None = None) -> None:
    """Write `data` as the object `key`, whole or not at all (a temporary file renamed)."""
    _inside_storage(key, root, "object key", "not written")
    _write_atomically(resolve(key, root), data)


def load_object(key: str, max_bytes: int, root: Path | None = None) -> bytes:
    """The bytes of the object `key`: PayloadFileMissing when it is not there,
    PayloadFileTooLarge past `max_bytes` (unread), PayloadPathRefused outside the directory or
    not a regular file."""
    real_path = _inside_storage(key, root, "object key", "not read")
    return _read_regular_file(
        real_path,
        resolve(key, root),
        max_bytes,
        "object key",
        lambda path, size: f"object {path} is {size} bytes, over the {max_bytes} bytes asked for:"
        " refused unread",
    )


def object_exists(key: str, root: Path | None = None) -> bool:
    """Whether the object `key` is stored (a regular file inside the storage directory)."""
    return _inside_storage(key, root, "object key", "not looked up").is_file()


def remove_object(key: str, root: Path | None = None) -> bool:
    """Remove the object `key`; whether it was there (a symlink is removed, never followed)."""
    real_path = _inside_storage(key, root, "object key", "not removed", follow_last_link=False)
    try:
        real_path.unlink()
    except FileNotFoundError:
        return False
    return True


def _inside_storage(
    key: str, root: Path | None, what: str, refused: str, *, follow_last_link: bool = True
) -> Path:
    """Where `key` really is (symlinks resolved as far as they exist, the last one only when
    `follow_last_link`); PayloadPathRefused when that is outside the storage directory, so an
    escape through any link is caught before anything is opened."""
    base = root if root is not None else storage_dir()
    path = resolve(key, root)
    real_root = base.resolve()
    real_path = path.resolve() if follow_last_link else path.parent.resolve() / path.name
    if Path(key).is_absolute() or not real_path.is_relative_to(real_root):
        raise PayloadPathRefused(
            f"{what} {key!r} is outside the storage directory {real_root}: {refused}"
        )
    return real_path


def _read_regular_file(
    real_path: Path, path: Path, max_bytes: int, what: str, too_large: Callable[[Path, int], str]
) -> bytes:
    """The bytes of a regular file of at most max_bytes (PayloadFileTooLarge, unread, past it)."""
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer; O_NOFOLLOW: the file resolved
        # before is not swapped for a symlink in between.
        handle = os.open(real_path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError as error:
        raise PayloadFileMissing(path) from error
    with os.fdopen(handle, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PayloadPathRefused(f"{what} {path} is not a regular file: not read")
        if info.st_size > max_bytes:
            raise PayloadFileTooLarge(too_large(path, info.st_size))
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PayloadFileTooLarge(too_large(path, len(data)))
    return data


def _write_atomically(path: Path, data: bytes) -> None:
    """Write `data` at `path` into a temporary file beside it, flushed to disk, then renamed."""
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


def _too_large(path: Path, size: int) -> str:
    return (
        f"payload file {path} is {size} bytes, over the {MAX_PAYLOAD_FILE_BYTES} bytes"
        " (MAX_PAYLOAD_FILE_BYTES) a payload file may be: refused unread"
    )
