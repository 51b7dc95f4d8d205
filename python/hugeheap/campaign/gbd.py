"""The Global Benchmark Database's names for SAT instances: a hash of the
formula (its clauses, whatever the comments, header, whitespace or
compression), and the address it serves each file at. The SAT Competition
names its tracks' instances this way, so a hash alone is enough to fetch and
verify one.

The hash is the MD5 of the clauses' literals as decimal integers, each
clause ending in 0, all separated by single spaces; comment (`c`) and header
(`p`) lines left out. HUGEHEAP_GBD_URL overrides the address (a template
with {hash}), e.g. for a mirror."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from urllib.parse import urlparse

from ..errors import HarnessError
from .compression import format_by_content, open_text

_HASH = re.compile(r"^[0-9a-f]{32}$")
DEFAULT_URL = "https://benchmark-database.de/file/{hash}"


def is_gbd_hash(value: str) -> bool:
    return bool(_HASH.match(value))


def gbd_url(digest: str) -> str:
    template = os.environ.get("HUGEHEAP_GBD_URL") or DEFAULT_URL
    if "{hash}" not in template:
        raise HarnessError(f"HUGEHEAP_GBD_URL={template!r} has no {{hash}}; write e.g. "
                           f"{DEFAULT_URL}")
    return template.replace("{hash}", digest)


def hash_in_url(url: str) -> str | None:
    """The GBD hash a URL of the database names (.../file/HASH, as in the
    SAT Competition's lists), or None."""
    parts = urlparse(url).path.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2] == "file" and is_gbd_hash(parts[-1].lower()):
        return parts[-1].lower()
    return None


def gbd_hash(path: Path) -> str:
    """The GBD hash of a DIMACS CNF file, compressed or not (by its format,
    whatever its name); a line starting with % ends the formula (SATLIB's
    files end so); a last clause without its 0 is hashed with it, as the
    database's own tools do. HarnessError if it is not CNF."""
    md5 = hashlib.md5(usedforsecurity=False)
    first = True
    last = "0"  # the last literal hashed: a clause is open unless it is 0
    try:
        with open_text(path, format_by_content(path)) as text:
            for number, line in enumerate(text, 1):
                words = line.split()
                if words and words[0][0] == "%":
                    break
                if not words or words[0][0] in "cp":
                    continue
                try:
                    literals = [str(int(word)) for word in words]
                except ValueError:
                    raise HarnessError(f"{path}:{number}: not DIMACS CNF (the line starts "
                                       f"{line.strip()[:30]!r}), so it has no GBD hash") from None
                md5.update(((" " if not first else "") + " ".join(literals)).encode())
                first, last = False, literals[-1]
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise HarnessError(f"{path}: cannot read it as CNF ({error})") from None
    if last != "0":
        md5.update(b" 0")
    return md5.hexdigest()
