"""The instances of a campaign: the suite's files as they are, the files it
names by URL and hash (fetched into the instance cache, cache.py, and linked
into the campaign directory, so that the campaign holds what it ran on), and
the output of its generator commands, made once and cached in the campaign
directory (a generated file is kept with the command that made it, and made
again only when the command changes). A generator may read a support file of
the suite ({file:NAME}: a downloaded model it compiles, say); the file's hash
is part of the command that made the instance. A generated program (an ELF
file or a script) is made executable, so that a tool can run it. An instance may be compressed
(compression.py): its name is without the compression's suffix, its path
the file as it is."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import HarnessError
from ..files import place_whole
from .cache import InstanceCache
from .compression import compression_of, format_problem, plain_name
from .remote import RemoteFile
from .suite import SUPPORT_FILE, Suite


@dataclass(frozen=True)
class Instance:
    name: str  # without a compression suffix
    path: Path  # the file, compressed or not

    @property
    def compression(self) -> str | None:
        return compression_of(self.path)


def prepare(suite: Suite, cache: Path, downloads: InstanceCache | None = None,
            tools: set[str] | None = None) -> list[Instance]:
    """Every instance, with an absolute path (a run starts in a directory of
    its own). cache: the campaign's folder of instances; downloads: the
    instance cache the suite's downloads come from (needed if it has any);
    tools: only the downloads and generated instances these tools run on,
    and the support files they need (None: all)."""
    cache = cache.resolve()
    instances = [Instance(name, path) for name, path in suite.files]
    wanted = suite.downloads_for(tools)
    if wanted:
        if downloads is None:
            raise HarnessError(f"{suite.path}: names instances by URL, and no instance cache "
                               "was given for them")
        for file in wanted:
            linked = _link(downloads.obtain(file).path, cache / file.name)
            problem = format_problem(linked)
            if problem:
                raise HarnessError(f"{problem} ({file.origin}); name it as its format is")
            if not file.support:  # a support file is there for the tools, not run on
                instances.append(Instance(file.instance, linked))
    taken = {i.name for i in instances}
    support = {file.name: file for file in suite.downloads if file.support}
    for generator in suite.generators_for(tools):
        read = [support[n] for word in generator.argv for n in SUPPORT_FILE.findall(word)]
        for seed in generator.seeds:
            file_name = generator.name.replace("{seed}", str(seed))
            name = plain_name(file_name)
            if name in taken:
                raise HarnessError(f"{suite.path}: the generated instance '{name}' has the name "
                                   "of an instance file; rename the generator's output")
            argv = [support_filled(word.replace("{seed}", str(seed)), cache)
                    for word in generator.argv]
            made = _generate(argv, generator.program, cache / file_name, suite.directory, read)
            problem = format_problem(made)
            if problem:
                raise HarnessError(f"{problem}: the generator {' '.join(argv)} wrote it; "
                                   "name its output as its format is")
            instances.append(Instance(name, made))
    return instances


def support_filled(word: str, instances: Path) -> str:
    """A word of a command with each {file:NAME} (a support file of the
    suite) made the file's path in the campaign's instances."""
    return SUPPORT_FILE.sub(lambda m: str((instances / m[1]).resolve()), word)


def _generate(argv: list[str], program: str, target: Path, directory: Path,
              reads: list[RemoteFile]) -> Path:
    recipe = target.with_name(target.name + ".command")
    # The support files' hashes with the command: a model changed under the
    # same name makes its instance again.
    command = "\0".join(argv + [f"{file.name}={file.sha256 or file.gbd}" for file in reads])
    if target.exists() and recipe.exists() and recipe.read_text() == command:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as out:
            done = subprocess.run([program, *argv[1:]], stdout=out, stderr=subprocess.PIPE,
                                  cwd=directory)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise HarnessError(f"cannot run the generator {' '.join(argv)}: {error.strerror}") \
            from None
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise HarnessError(f"the generator {' '.join(argv)} failed (exit code {done.returncode})"
                           + (f": {message[-1]}" if message else ""))
    with open(partial, "rb") as made:
        head = made.read(4)
    if head == b"\x7fELF" or head[:2] == b"#!":
        partial.chmod(0o755)
    os.replace(partial, target)  # a generator stopped halfway leaves no instance behind
    recipe.write_text(command)
    return target


def _link(cached: Path, target: Path) -> Path:
    """The cached file at target, in the campaign's folder: a hard link where
    both are on one filesystem, else a copy (a Slurm node may not see the
    cache). Kept as it is when it is already that file."""
    if target.exists() and target.samefile(cached):
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        place_whole(cached, target, target.with_name(f".{target.name}.{os.getpid()}.partial"))
    except OSError as error:
        raise HarnessError(f"cannot put {cached.name} into {target.parent} "
                           f"({error.strerror})") from None
    return target
