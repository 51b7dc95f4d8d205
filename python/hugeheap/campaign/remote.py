"""Instances named by where they come from rather than by a file here: a URL
and the sha256 of the file behind it, as a user names a public benchmark
file, or a Global Benchmark Database hash alone (gbd.py). The instance cache
(cache.py) fetches each once and verifies it; this module only says what a
suite asks for.

Besides single entries in a suite, two kinds of set files name many at once:

- a manifest (TOML), the form of the sets this repository ships: where each
  file comes from (repository, commit, path, licence), its size and sha256,
  optionally a copy vendored beside the manifest:

      [set]                                       # what the set is, free-form:
      family = "sat"                              # family, tools, why_fewer, ...

      [sources.satcomp]
      repository = "https://github.com/OWNER/NAME"
      commit = "0123...abcd"                      # 40 hex digits
      licence = "MIT (LICENSE)"                   # as the source states it
      url = "https://raw.githubusercontent.com/OWNER/NAME/{commit}/{path}"

      [[instances]]
      name = "x.cnf.xz"                           # unique in the set
      source = "satcomp"
      path = "dir/x.cnf.xz"                       # in the repository
      size = 123456
      sha256 = "..."
      vendored = "files/x.cnf.xz"                 # optional: a copy here, relative to the manifest
      answer = "unsat"                            # optional: what the tools answered

- a list of URLs, one per line (`.uri`, as the SAT Competition publishes its
  tracks): each must name a Global Benchmark Database file
  (https://benchmark-database.de/file/HASH), whose hash verifies it.

An entry naming one file is read by one parser (parse_entry), whether it is
a suite's [[instances.download]] or a manifest's [[instances]]: the same
keys mean the same and the same mistake is the same error, `ORIGIN: problem;
fix`, where ORIGIN names the file and the entry. Every other mistake is one
HarnessError naming the file and the fix too."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..errors import HarnessError
from .compression import plain_name
from .gbd import gbd_url, hash_in_url, is_gbd_hash
from .toml_checker import unknown_key

SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SOURCE_KEYS = {"repository", "commit", "licence", "url"}
# The keys of an entry naming one file: those of every entry, and those of a
# suite's [[instances.download]] (in the quick size; a support file) or of a
# manifest's [[instances]] (where it comes from; a copy here; what tools answered).
ENTRY_KEYS = {"name", "url", "sha256", "gbd", "size"}
DOWNLOAD_KEYS = {"quick", "support"}
MANIFEST_KEYS = {"source", "path", "vendored", "answer"}


@dataclass(frozen=True)
class RemoteFile:
    """One file the cache can fetch and verify."""
    name: str  # the file's name, with its compression suffix (x.cnf.xz holds x.cnf)
    url: str
    sha256: str | None  # of the file as fetched; or, for a GBD instance, None
    gbd: str | None = None  # the Global Benchmark Database hash, when that names it
    size: int | None = None  # bytes, where the source says (a download of another size fails)
    vendored: Path | None = None  # a copy in this repository, used before the network
    origin: str = ""  # where it was named, for messages: "suite.toml:12", "sets/sat.toml"
    quick: bool = False  # in the suite's quick size
    support: bool = False  # not an instance: a file the tools read beside it ({file:NAME})

    @property
    def key(self) -> str:
        """Its place in the cache: the hash that verifies it."""
        return f"sha256/{self.sha256}" if self.sha256 else f"gbd/{self.gbd}"

    @property
    def instance(self) -> str:
        return plain_name(self.name)


@dataclass(frozen=True)
class Manifest:
    """The manifest an entry is in: the file (a vendored copy is relative to
    its folder) and its [sources.NAME] (where an entry's url comes from)."""
    path: Path
    sources: dict[str, dict[str, Any]]


def read_set(path: Path) -> list[RemoteFile]:
    """The files a set file names: a manifest (.toml) or a list of GBD URLs
    (any other suffix, e.g. .uri)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise HarnessError(f"{path}: cannot read the set file ({error.strerror})") from None
    except UnicodeDecodeError:
        raise HarnessError(f"{path}: not a set file (not UTF-8 text); a set is a manifest "
                           "(.toml) or a list of URLs, one a line") from None
    files = _read_manifest(path, text) if path.suffix == ".toml" else _read_url_list(path, text)
    if not files:
        raise HarnessError(f"{path}: the set names no instance; add [[instances]] entries "
                           "(a manifest) or URL lines")
    seen: dict[str, str] = {}
    for file in files:
        if file.instance in seen:
            raise HarnessError(f"{file.origin}: the instance '{file.instance}' is named twice "
                               f"in {path.name} (also {seen[file.instance]}); keep one")
        seen[file.instance] = file.origin
    return files


def _read_url_list(path: Path, text: str) -> list[RemoteFile]:
    files = []
    for number, line in enumerate(text.splitlines(), 1):
        url = line.strip()
        if not url or url.startswith("#"):
            continue
        origin = f"{path}:{number}"
        _check_url(url, origin)
        digest = hash_in_url(url)
        if digest is None:
            raise HarnessError(f"{origin}: '{url}' names no Global Benchmark Database file "
                               "(.../file/HASH), so nothing verifies what it downloads; name "
                               "such files in a manifest (.toml) with their sha256")
        files.append(RemoteFile(name=f"{digest}.cnf.xz", url=gbd_url(digest), sha256=None,
                                gbd=digest, origin=origin))
    return files


def _read_manifest(path: Path, text: str) -> list[RemoteFile]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HarnessError(f"{path}: not valid TOML: {error}") from None
    unknown = sorted(set(data) - {"set", "sources", "instances"})
    if unknown:
        raise HarnessError(f"{path}: unknown table '{unknown[0]}'; a manifest has [set] (what "
                           "it is), [sources.NAME] and [[instances]]")
    sources = data.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, dict) for v in sources.values()):
        raise HarnessError(f"{path}: [sources.NAME] must be tables; write [sources.mine] with "
                           "repository, commit, licence and url")
    for name, source in sources.items():
        _check_source(path, name, source)
    entries = data.get("instances", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise HarnessError(f"{path}: instances must be [[instances]] tables")
    manifest = Manifest(path, sources)
    files = []
    for index, entry in enumerate(entries):
        name = entry.get("name")
        origin = f"{path}: instance {name!r}" if isinstance(name, str) else \
            f"{path}: [[instances]] number {index + 1}"
        files.append(parse_entry(entry, origin, manifest))
    return files


def _check_source(path: Path, name: str, source: dict[str, Any]) -> None:
    where = f"{path}: [sources.{name}]"
    unknown = sorted(set(source) - _SOURCE_KEYS)
    if unknown:
        raise HarnessError(f"{where}: unknown key '{unknown[0]}'; the keys there are "
                           f"{', '.join(sorted(_SOURCE_KEYS))}")
    for key in sorted(_SOURCE_KEYS):
        if not isinstance(source.get(key), str) or not source[key].strip():
            raise HarnessError(f"{where} has no {key}; every source says its repository, "
                               "commit, licence (as the source states it) and url template")
    if not _COMMIT.match(source["commit"]):
        raise HarnessError(f"{where}: commit '{source['commit']}' is not 40 hex digits; name "
                           "the exact commit the files were taken from")


def parse_entry(values: dict[str, Any], origin: str, manifest: Manifest | None = None
                ) -> RemoteFile:
    """The file one entry names: a suite's [[instances.download]] (manifest
    None: its name may be left to its gbd hash or its URL, and it may be
    quick or a support file), or an [[instances]] entry of a manifest (it
    names itself, and may say its source and path, a vendored copy and an
    answer). Every mistake is one HarnessError `origin: problem; fix`."""
    unknown = unknown_key(values, ENTRY_KEYS | (MANIFEST_KEYS if manifest else DOWNLOAD_KEYS))
    if unknown is not None:
        raise _error(origin, f"unknown key '{unknown[0]}'", unknown[1])
    gbd = _check_gbd(values["gbd"], origin) if "gbd" in values else None
    sha256 = _check_sha256(values["sha256"], origin) if "sha256" in values else None
    if sha256 is None and gbd is None:
        raise _error(origin, "neither sha256 nor gbd says which file it is, so nothing would "
                     "verify what it downloads", 'add sha256 = "..." (the file\'s sha256sum)')
    gbd_alone = gbd if sha256 is None else None  # else the sha256 verifies it
    url = _url(values, origin, manifest, gbd_alone)
    name = values.get("name")
    if name is None and manifest is not None:
        raise _error(origin, "the entry has no name", 'add name = "file.cnf.xz"')
    if name is None:
        name = f"{gbd}.cnf.xz" if gbd else Path(url.split("?")[0]).name
    _check_name(name, origin)
    vendored = values.get("vendored")
    if vendored is not None and (not isinstance(vendored, str) or not vendored):
        raise _error(origin, "vendored must be a path relative to the manifest",
                     'write vendored = "files/NAME"')
    quick, support = (_flag(values, key, origin) for key in ("quick", "support"))
    return RemoteFile(name=name, url=url, sha256=sha256, gbd=gbd_alone,
                      size=_check_size(values.get("size"), origin),
                      vendored=manifest.path.parent / vendored if manifest and vendored else None,
                      origin=origin, quick=quick, support=support)


def _error(origin: str, problem: str, fix: str) -> HarnessError:
    """The one form of a mistake in a set file or an entry."""
    return HarnessError(f"{origin}: {problem}; {fix}")


def _url(values: dict[str, Any], origin: str, manifest: Manifest | None,
         gbd_alone: str | None) -> str:
    """Where an entry's file is downloaded from: its url; else, in a
    manifest, its source's url template with its path; else, for a file a
    GBD hash alone names, the Global Benchmark Database's (gbd.py)."""
    if "url" in values:
        url = values["url"]
    elif manifest is not None and "source" in values:
        url = _url_from_source(origin, values, manifest.sources)
    elif gbd_alone is not None:
        url = gbd_url(gbd_alone)
    else:
        raise _error(origin, "the entry has no url", 'add url = "https://..."' + (
            ', or source = "NAME" (a [sources.NAME] of the manifest) and path' if manifest
            else ""))
    _check_url(url, origin)
    return str(url)


def _url_from_source(origin: str, entry: dict[str, Any],
                     sources: dict[str, dict[str, Any]]) -> str:
    source = entry.get("source")
    if not isinstance(source, str) or source not in sources:
        known = ", ".join(sorted(sources)) or "none"
        raise _error(origin, f"source {source!r} is no [sources.NAME] of the manifest (its "
                     f"sources: {known})", "name one of them, or give the entry its own url")
    file_path = entry.get("path")
    if not isinstance(file_path, str) or not file_path:
        raise _error(origin, "the entry has no path (where the file is in the source's "
                     "repository)", 'add path = "dir/file.cnf.xz"')
    template = sources[source]["url"]
    try:
        return str(template.format(commit=sources[source]["commit"], path=file_path))
    except (KeyError, IndexError, ValueError):
        raise _error(origin, f"the url template of [sources.{source}] holds more than "
                     "{commit} and {path}", "write it with those two alone") from None


def _check_url(url: object, origin: str) -> None:
    if not isinstance(url, str):
        raise _error(origin, f"url {url!r} is not a string", 'write url = "https://..."')
    if urlparse(url).scheme not in ("http", "https", "file"):
        raise _error(origin, f"'{url}' is not an http, https or file URL",
                     "give the address the file can be downloaded from")


def _check_name(name: object, origin: str) -> None:
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise _error(origin, f"the instance name {name!r} must be a plain file name",
                     'leave out directories, e.g. name = "x.cnf.xz"')


def _check_sha256(value: object, origin: str) -> str:
    if not isinstance(value, str) or not SHA256.match(value.lower()):
        raise _error(origin, f"sha256 {value!r} is not 64 hex digits",
                     "write the file's `sha256sum`")
    return value.lower()


def _check_gbd(value: object, origin: str) -> str:
    if not isinstance(value, str) or not is_gbd_hash(value.lower()):
        raise _error(origin, f"gbd {value!r} is not a Global Benchmark Database hash",
                     "write the 32 hex digits the database names the file by")
    return value.lower()


def _check_size(value: object, origin: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < 0):
        raise _error(origin, f"size {value!r} is not a number of bytes",
                     "write the file's size in bytes, e.g. size = 123456")
    return value


def _flag(values: dict[str, Any], key: str, origin: str) -> bool:
    flag = values.get(key, False)
    if not isinstance(flag, bool):
        raise _error(origin, f"{key} must be true or false", f"write {key} = true")
    return flag
