"""The instance cache: files a suite names by URL and hash (remote.py),
fetched once, verified, and kept by the hash that verifies them, so that a
campaign with a warm cache runs offline and suites naming the same file
share one copy.

    DIR/sha256/HEX/NAME    a file whose sha256 is HEX, under the name it was
                           first stored with (its suffix says its compression)
    DIR/gbd/HASH/NAME      a CNF whose Global Benchmark Database hash is HASH
    DIR/partial/           files being fetched or added: a file reaches
                           sha256/ or gbd/ only whole and verified

DIR is --cache, else $HUGEHEAP_CACHE, else $XDG_CACHE_HOME/hugeheap,
else ~/.cache/hugeheap. Whatever stops a fetch (a hash that does
not match, a server that cannot be reached or stops midway, a full disk, an
interrupt) leaves nothing in sha256/ or gbd/, and the partial file is
removed; a partial file whose process was killed is removed by the next
cache opened on DIR."""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .. import __version__
from ..errors import HarnessError
from ..files import place_whole
from .compression import plain_name
from .gbd import gbd_hash
from .remote import RemoteFile

# Called as bytes arrive: the file, bytes so far, bytes in all (None: unknown).
OnProgress = Callable[[RemoteFile, int, int | None], None]
_CHUNK = 1 << 20
_FULL = (errno.ENOSPC, errno.EDQUOT)  # what a write into a full disk or quota fails with
_TIMEOUT_S = 60  # of one connection attempt or one read: a stalled server is named, not waited on


def default_directory() -> Path:
    if os.environ.get("HUGEHEAP_CACHE"):
        return Path(os.environ["HUGEHEAP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hugeheap"


@dataclass(frozen=True)
class Obtained:
    file: RemoteFile
    path: Path  # in the cache
    how: str  # "cached" (it was there), "vendored" (from this repository's copy), "downloaded"


class InstanceCache:
    def __init__(self, directory: Path, on_progress: OnProgress | None = None) -> None:
        self.directory = directory
        self.on_progress = on_progress
        self.partial = directory / "partial"
        try:
            self.partial.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise HarnessError(f"cannot make the instance cache {directory} ({error.strerror}); "
                               "give another --cache DIR") from None
        self._remove_abandoned()

    def find(self, file: RemoteFile) -> Path | None:
        """The file's cached copy, or None."""
        return _first_in(self.directory / file.key)

    def obtain(self, file: RemoteFile) -> Obtained:
        """The file in the cache: found there, else copied from the
        repository's vendored copy, else downloaded; verified before it is
        stored. HarnessError (one line) if it cannot be had."""
        cached = self.find(file)
        if cached is not None:
            return Obtained(file, cached, "cached")
        if file.vendored is not None and file.vendored.is_file():
            try:
                with open(file.vendored, "rb") as source:
                    return Obtained(file, self._store(file, source, None, str(file.vendored)),
                                    "vendored")
            except OSError as error:
                raise HarnessError(f"{file.vendored}: cannot read the vendored copy of "
                                   f"{file.name} ({error.strerror})") from None
        return Obtained(file, self._download(file), "downloaded")

    def add(self, path: Path) -> list[tuple[str, Path]]:
        """A file one already has into the cache, under its sha256 and, for a
        CNF, its GBD hash too: [(kind:hash, where it is now)]."""
        try:
            with open(path, "rb") as source:
                probe = RemoteFile(name=path.name, url=path.resolve().as_uri(), sha256=None,
                                   origin=str(path))
                stored = self._store(probe, source, None, str(path))
        except OSError as error:
            raise HarnessError(f"{path}: cannot read it ({error.strerror})") from None
        keys = [(f"sha256:{stored.parent.name}", stored)]
        if plain_name(path.name).endswith(".cnf"):
            digest = gbd_hash(stored)
            keys.append((f"gbd:{digest}", self._keep(stored, self.directory / "gbd" / digest,
                                                     path.name)))
        return keys

    # -- the one way into the cache: a stream into partial/, verified, renamed

    def _download(self, file: RemoteFile) -> Path:
        request = urllib.request.Request(file.url, headers={
            "User-Agent": f"hugeheap/{__version__} (benchmark instance cache)"})
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else file.size
                return self._store(file, response, total, file.url)
        except urllib.error.HTTPError as error:
            raise HarnessError(f"{file.url}: the server answered {error.code} {error.reason} "
                               f"({file.origin}); fix the URL, or add a copy you have with "
                               "`hugeheap cache add FILE`") from None
        except urllib.error.URLError as error:
            reason = error.reason.strerror if isinstance(error.reason, OSError) and \
                error.reason.strerror else str(error.reason)
            raise HarnessError(f"{file.url}: cannot download it ({reason}; {file.origin}); "
                               "check the network, or add a copy you have with `hugeheap "
                               "cache add FILE`") from None
        except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
            raise HarnessError(f"{file.url}: the download broke off ({_why(error)}); nothing "
                               "was kept, run the command again") from None

    def _store(self, file: RemoteFile, source: IO[bytes], total: int | None,
               where: str) -> Path:
        """source's bytes into the cache as file, if they verify; the path."""
        partial = self.partial / f"{os.getpid()}.{file.name}"
        done = 0
        digest = hashlib.sha256()
        try:
            try:
                with open(partial, "wb") as out:
                    while chunk := source.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if self.on_progress:
                            self.on_progress(file, done, total)
                    out.flush()
                    os.fsync(out.fileno())
            except http.client.IncompleteRead as error:
                raise HarnessError(_stopped(where, done + len(error.partial), total)) from None
            except (TimeoutError, ConnectionError) as error:
                raise HarnessError(f"{where}: the download broke off after {done:,} bytes "
                                   f"({_why(error)}); nothing was kept, run the command "
                                   "again") from None
            except OSError as error:
                if error.errno in _FULL:
                    raise HarnessError(
                        f"the instance cache {self.directory} is full: no room for {file.name} "
                        f"(stopped at {done:,} bytes{f' of {total:,}' if total else ''}); free "
                        "room there or give another --cache DIR") from None
                raise HarnessError(f"cannot write {file.name} into the instance cache "
                                   f"{self.directory} ({error.strerror})") from None
            if total is not None and done < total:
                raise HarnessError(_stopped(where, done, total))
            if file.size is not None and done != file.size:
                raise HarnessError(f"{where}: the file has {done:,} bytes, {file.origin} says "
                                   f"{file.size:,}; nothing was kept (the file changed, or the "
                                   "size is wrong)")
            return self._verified(file, partial, digest.hexdigest(), where)
        finally:
            partial.unlink(missing_ok=True)

    def _verified(self, file: RemoteFile, partial: Path, sha256: str, where: str) -> Path:
        if file.sha256 is not None and sha256 != file.sha256:
            raise HarnessError(f"{where}: the file's sha256 is {sha256}, {file.origin} says "
                               f"{file.sha256}; nothing was kept (the file changed, or the "
                               "hash is wrong)")
        if file.gbd is not None:
            digest = gbd_hash(partial)
            if digest != file.gbd:
                raise HarnessError(f"{where}: the formula's GBD hash is {digest}, "
                                   f"{file.origin} says {file.gbd}; nothing was kept")
            return self._keep(partial, self.directory / "gbd" / file.gbd, file.name)
        return self._keep(partial, self.directory / "sha256" / sha256, file.name)

    def _keep(self, source: Path, folder: Path, name: str) -> Path:
        """source in the cache folder of its hash, unless a copy is there
        already (stored by another process, or under another name)."""
        return _first_in(folder) or self._place(source, folder / name)

    def _place(self, source: Path, target: Path) -> Path:
        """source as target, atomically: a reader sees the whole file or none.
        A second process storing the same file at once is harmless."""
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            place_whole(source, target, self.partial / f"{os.getpid()}.placing.{target.name}")
            return target
        except OSError as error:
            if error.errno in _FULL:
                raise HarnessError(f"the instance cache {self.directory} is full: no room for "
                                   f"{target.name}; free room there or give another --cache "
                                   "DIR") from None
            raise HarnessError(f"cannot store {target.name} in the instance cache "
                               f"{self.directory} ({error.strerror})") from None

    def _remove_abandoned(self) -> None:
        """Partial files of processes that no longer run (killed mid-fetch)."""
        for leftover in self.partial.iterdir():
            pid = leftover.name.split(".", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                leftover.unlink(missing_ok=True)


def fetch_all(files: list[RemoteFile], directory: Path, on_progress: OnProgress | None = None
              ) -> tuple[InstanceCache, list[Obtained]]:
    """Every file into the instance cache in directory: the cache (for the
    campaign to take them from) and what happened to each. HarnessError at
    the first that cannot be had."""
    cache = InstanceCache(directory, on_progress)
    return cache, [cache.obtain(file) for file in files]


def _first_in(folder: Path) -> Path | None:
    found = sorted(folder.iterdir()) if folder.is_dir() else []
    return found[0] if found else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stopped(where: str, done: int, total: int | None) -> str:
    return (f"{where}: the download stopped after {done:,}"
            + (f" of {total:,}" if total else "") + " bytes; nothing was kept, run the "
            "command again")


def _why(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__
