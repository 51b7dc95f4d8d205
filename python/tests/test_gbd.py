"""The GBD hash (campaign/gbd.py) held against the hashes the SAT
Competition published for real instances: three of its 2023 main track, kept
in data/gbd/ (where they come from: its README.md), as they are, written
otherwise (comments, header, line ends, spacing, another compression) and
with the last clause left open, must hash to what the competition's list
names them by."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest

from hugeheap.campaign.gbd import gbd_hash

DATA = Path(__file__).parent / "data" / "gbd"

# From the SAT Competition 2023's detailed results, bench_meta.csv in
# sc2023-detailed-results.zip (https://satcompetition.github.io/2023/downloads.html,
# "Detailed Results"), which lists each main-track instance as
# hash,author,family,filename; the track's benchmark links fetch the same
# instances as https://benchmark-database.de/file/HASH.
PUBLISHED = {
    "BZ2File_write_11.cnf.xz": "246afd75cb97a21144f368c00252a656",
    "Urquhart-s3-b3.shuffled-as.sat03-1556.cnf.xz": "0297c2a35f116ffd5382aea5b421e6df",
    "sgen3-n260-s62321009-sat.cnf.xz": "328da7966b09b2f6e99c93c4e877fbff",
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_competition_instance_has_the_hash_the_competition_published(name: str) -> None:
    assert gbd_hash(DATA / name) == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_same_clauses_written_otherwise_keep_the_published_hash(name: str,
                                                                     tmp_path: Path) -> None:
    clauses = lzma.decompress((DATA / name).read_bytes()).decode().splitlines()
    assert clauses[0].startswith("p cnf ")  # the competition's files: a header, then clauses
    # Comments before and among the clauses, the header spaced out, DOS line
    # ends, runs of blanks and tabs, and gzip in place of xz.
    rewritten = ["c rewritten for the test", clauses[0].replace(" ", "  ") + " "]
    for number, line in enumerate(clauses[1:]):
        if number % 7 == 0:
            rewritten.append("c a comment among the clauses")
        rewritten.append(("\t" if number % 2 else " ") + line.replace(" ", " \t "))
    other = tmp_path / "rewritten.cnf.gz"
    other.write_bytes(gzip.compress("\r\n".join(rewritten).encode() + b"\r\n"))
    assert gbd_hash(other) == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_last_clause_without_its_0_keeps_the_published_hash(name: str, tmp_path: Path) -> None:
    """The database's tools close a last clause the file left open, so the
    file without its last 0 is the same formula under the same hash."""
    text = lzma.decompress((DATA / name).read_bytes()).decode().rstrip()
    assert text.endswith(" 0")
    other = tmp_path / "open.cnf"
    other.write_text(text[:-len(" 0")] + "\n")
    assert gbd_hash(other) == PUBLISHED[name]
