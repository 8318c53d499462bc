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
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

STORAGE_DIR_ENV = "TASKPOOL_STORAGE_DIR"
DEFAULT_STORAGE_DIR = "storage"
COMPRESS_LEVEL = 6


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
    return SavedPayload(
        storage_path=storage_path,
        path=path,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def load_payload(storage_path: str, sha256: str | None = None, root: Path | None = None) -> bytes:
    """The raw body of a stored payload.

    PayloadFileMissing when the file is not there; PayloadFileCorrupt when it does not match
    `sha256` (when given) or does not decompress.
    """
    path = resolve(storage_path, root)
    try:
        data = path.read_bytes()
    except FileNotFoundError as error:
        raise PayloadFileMissing(path) from error
    if sha256 is not None:
        found = hashlib.sha256(data).hexdigest()
        if found != sha256.lower():
            raise PayloadFileCorrupt(
                f"payload file {path} has sha256 {found}, not the recorded {sha256.lower()}:"
                " it changed after it was saved"
            )
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        raise PayloadFileCorrupt(f"payload file {path} does not decompress: {error}") from error
