"""A small virtual machine whose kernel mounts the unified cgroup hierarchy
(cgroup v2) with the memory, cpu, cpuset, io and pids controllers, for the
tests that must see cgroup v2 and THP settings this machine does not have.

What it is made of, kept in build/vm/ between runs:
- Debian's kernel: the package that linux-image-amd64 depends on, fetched
  with `apt-get download` and unpacked with dpkg-deb;
- an initramfs: a static busybox, vm_init.sh as /init, the kernel's virtio
  and 9p modules (and what they depend on), and an /etc with a root and an
  unprivileged user;
- qemu-system-x86_64 boots it with KVM where KVM works (a boot that does not
  reach /init within KVM_WAIT_S is given up) and with TCG otherwise.

The host's /usr and this checkout are shared read-only over 9p at the same
paths (the root's /bin, /lib and /lib64 link into /usr, as on Debian), so
that the checkout's .venv and build/ run inside as they do here; a third
share, /out, is the only one the machine writes. /init runs /out/script.sh
and powers off."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE = REPO_ROOT / "build" / "vm"
KERNEL_PACKAGE = "linux-image-amd64"  # Debian's current kernel, by dependency
MODULES = ("virtio_pci", "9pnet_virtio", "9p")  # with the modules they depend on
KVM_WAIT_S = 8.0  # a KVM boot reaches /init in about a second where KVM works
BOOTED = "hugeheap-vm: booted"  # what /init prints once the shares are mounted
USER_ID = 1000  # the unprivileged user in the machine ("hh")


class Stopped(Exception):
    """A boot given up before the machine powered off (the session ended)."""


def unavailable() -> str | None:
    """Why no machine can be booted here (nothing to boot it with); None
    when it can be, by KVM or by TCG."""
    missing = [name for name in ("qemu-system-x86_64", "apt-get", "dpkg-deb")
               if shutil.which(name) is None]
    if missing:
        return (f"{', '.join(missing)} not found: the cgroup v2 machine needs qemu "
                "(Debian package qemu-system-x86; `make` installs it as root) and Debian's "
                "apt-get and dpkg-deb to fetch its kernel")
    if not _static_busybox():
        return ("no static busybox (Debian package busybox-static; `make` installs it as "
                "root): the machine's initramfs is made of it")
    return None


def _static_busybox() -> Path | None:
    for candidate in (Path("/bin/busybox"), Path("/usr/bin/busybox")):
        if candidate.is_file() and b"\0/lib64/ld-linux" not in candidate.read_bytes()[:4096]:
            return candidate
    return None


@dataclass
class Boot:
    """What one boot of the machine gave."""
    accel: str  # kvm or tcg
    console: str  # everything the machine printed on its serial console
    seconds: float  # from starting qemu until it exited
    out: Path  # the /out share, with what the script wrote


class CgroupVM:
    """The machine, made once (prepare) and booted as often as wanted."""

    def __init__(self, cache: Path = CACHE) -> None:
        self.cache = cache
        self.kernel: Path | None = None
        self.initramfs: Path | None = None

    # ---------------------------------------------------------- making it

    def prepare(self) -> None:
        """Fetches and unpacks the kernel (once), and makes the initramfs
        (again when its parts changed)."""
        self.cache.mkdir(parents=True, exist_ok=True)
        root = self._kernel_tree()
        self.kernel = next((root / "boot").glob("vmlinuz-*"))
        self.initramfs = self._make_initramfs(root)

    def _kernel_tree(self) -> Path:
        """The unpacked kernel package: boot/vmlinuz-*, lib/modules/*. The
        one Debian's package lists name now, fetched once; where it cannot be
        fetched (no network), one fetched before."""
        cached = sorted(self.cache.glob("linux-image-*/boot"))
        try:
            package = _depended_kernel_package()
        except RuntimeError:
            if cached:
                return cached[-1].parent
            raise
        tree = self.cache / package
        if (tree / "boot").is_dir():
            return tree
        download = self.cache / "download"
        shutil.rmtree(download, ignore_errors=True)
        download.mkdir()
        fetched = _apt(["apt-get", "download", package], cwd=download)
        debs = list(download.glob("*.deb"))
        if fetched.returncode != 0 or not debs:
            if cached:
                return cached[-1].parent
            raise RuntimeError(f"`apt-get download {package}` failed (the machine's kernel is "
                               f"fetched once, over the network, into {self.cache}): "
                               f"{_last_line(fetched)}")
        partial = self.cache / f"{package}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(partial)], check=True, timeout=600)
        partial.rename(tree)
        shutil.rmtree(download)
        return tree

    def _make_initramfs(self, kernel_tree: Path) -> Path:
        busybox = _static_busybox()
        assert busybox is not None
        modules = _modules_in_load_order(kernel_tree, MODULES)
        init = Path(__file__).with_name("vm_init.sh")
        # The image is made again when any of its parts changes.
        key = "|".join([str(busybox.stat().st_mtime_ns), str(init.stat().st_mtime_ns),
                        str(kernel_tree), *(m.name for m in modules),
                        hashlib.sha256(Path("/etc/ld.so.cache").read_bytes()).hexdigest()])
        image = self.cache / "initramfs.gz"
        stamp = self.cache / "initramfs.key"
        if image.exists() and stamp.exists() and stamp.read_text() == key:
            return image
        with tempfile.TemporaryDirectory(dir=self.cache) as scratch:
            root = Path(scratch)
            root.chmod(0o755)  # the machine's /: every user goes through it
            for directory in ("bin", "dev", "proc", "sys", "tmp", "usr", "out", "etc",
                              "modules", "root"):
                (root / directory).mkdir()
            for link in ("lib", "lib64", "sbin"):
                (root / link).symlink_to(f"usr/{link}")
            shutil.copy2(busybox, root / "bin" / "busybox")
            (root / "bin" / "sh").symlink_to("busybox")
            shutil.copy2(init, root / "init")
            (root / "init").chmod(0o755)
            for module in modules:
                target = root / "modules" / module.name.split(".ko")[0]
                data = module.read_bytes()
                if module.name.endswith(".ko.xz"):
                    data = lzma.decompress(data)
                target.with_suffix(".ko").write_bytes(data)
            (root / "modules" / "order").write_text(
                "\n".join(m.name.split(".ko")[0] for m in modules) + "\n")
            (root / "etc" / "passwd").write_text(
                f"root:x:0:0:root:/root:/bin/sh\nhh:x:{USER_ID}:{USER_ID}:hh:/tmp/hh:/bin/sh\n")
            (root / "etc" / "group").write_text(f"root:x:0:\nhh:x:{USER_ID}:\n")
            shutil.copy2("/etc/ld.so.cache", root / "etc" / "ld.so.cache")
            files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True)
            archive = subprocess.run([str(busybox), "cpio", "-o", "-H", "newc", "-R", "0:0"],
                                     cwd=root, input=files.stdout, capture_output=True,
                                     check=True)
            partial = image.with_suffix(".partial")
            partial.write_bytes(gzip.compress(archive.stdout, compresslevel=1))
            partial.rename(image)
        stamp.write_text(key)
        return image

    # ---------------------------------------------------------- booting it

    def boot(self, script: str, out: Path, shares: dict[str, Path], cmdline: str = "",
             timeout: float = 900.0, stop: threading.Event | None = None) -> Boot:
        """Boots the machine, which runs script (busybox sh, as root) with
        out mounted at /out (writable) and every shares path mounted read-only
        at the same path, then powers off. KVM first where it may work. Once
        stop is set the machine is killed and the boot raises Stopped."""
        assert self.kernel is not None and self.initramfs is not None, "prepare() first"
        stop = stop or threading.Event()
        out.mkdir(parents=True, exist_ok=True)
        (out / "script.sh").write_text(script)
        (out / "mounts").write_text("".join(f"{tag} {path}\n" for tag, path in shares.items()))
        if Path("/dev/kvm").exists() and os.access("/dev/kvm", os.R_OK | os.W_OK):
            boot = self._qemu("kvm", out, shares, cmdline, timeout, stop)
            if boot is not None:
                return boot
        boot = self._qemu("tcg", out, shares, cmdline, timeout, stop)
        assert boot is not None
        return boot

    def _qemu(self, accel: str, out: Path, shares: dict[str, Path], cmdline: str,
              timeout: float, stop: threading.Event) -> Boot | None:
        """One boot; None when a KVM boot did not reach /init in time."""
        # -cpu max: the host's numpy and scipy use instructions qemu64 lacks.
        argv = ["qemu-system-x86_64", "-machine", "q35", "-accel", accel, "-cpu", "max",
                "-smp", "2", "-m", "2048", "-nographic", "-no-reboot", "-nic", "none",
                "-kernel", str(self.kernel), "-initrd", str(self.initramfs),
                "-append", f"console=ttyS0 panic=-1 quiet {cmdline}".strip(),
                "-virtfs", f"local,path={out},mount_tag=out,security_model=none"]
        for tag, path in shares.items():
            argv += ["-virtfs", f"local,path={path},mount_tag={tag},security_model=none,"
                                "readonly=on"]
        started = time.monotonic()
        console = out / f"console-{accel}.log"
        with open(console, "wb") as log:
            qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                deadline = started + (KVM_WAIT_S if accel == "kvm" else timeout)
                while qemu.poll() is None and time.monotonic() < deadline:
                    if stop.wait(0.2):
                        raise Stopped(f"the machine ({accel}) was stopped before it powered off")
                    if accel == "kvm" and BOOTED in console.read_text(errors="replace"):
                        deadline = started + timeout
                if qemu.poll() is None:
                    qemu.kill()
                    qemu.wait()
                    if accel == "kvm" and BOOTED not in console.read_text(errors="replace"):
                        return None
                    raise TimeoutError(f"the machine ({accel}) did not power off within "
                                       f"{timeout:.0f} s; its console: {console}")
            finally:
                if qemu.poll() is None:
                    qemu.kill()
                    qemu.wait()
        text = console.read_text(errors="replace")
        if accel == "kvm" and BOOTED not in text:
            return None  # qemu refused KVM here (it exits at once)
        return Boot(accel, text, time.monotonic() - started, out)


def shares_for(python: Path) -> dict[str, Path]:
    """What the machine must see to run python (a venv's interpreter) and
    this checkout: /usr, the checkout, and the prefix of the interpreter the
    venv was made from where that is outside /usr (pyenv's, say)."""
    shares = {"usr": Path("/usr"), "repo": REPO_ROOT}
    prefix = subprocess.run([str(python), "-c", "import sys; print(sys.base_prefix)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    base = Path(prefix).resolve()
    if not base.is_relative_to("/usr") and not base.is_relative_to(REPO_ROOT):
        shares["python"] = base
    return shares


def _depended_kernel_package() -> str:
    """The versioned kernel package linux-image-amd64 depends on here."""
    shown = _apt(["apt-cache", "depends", KERNEL_PACKAGE])
    found = re.search(r"Depends: (linux-image-[\w.+-]+)", shown.stdout)
    if found is None:
        raise RuntimeError(f"`apt-cache depends {KERNEL_PACKAGE}` names no kernel package "
                           f"(are Debian's package lists there?): {_last_line(shown)}")
    return found.group(1)


def _apt(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """argv (apt-get or apt-cache); once more after `apt-get update` where it
    failed and this is root (a fresh machine's package lists are empty or
    stale)."""
    def attempt() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)

    done = attempt()
    if (done.returncode != 0 or not done.stdout.strip()) and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=600)
        done = attempt()
    return done


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def _modules_in_load_order(kernel_tree: Path, wanted: tuple[str, ...]) -> list[Path]:
    """The module files of wanted and of what they depend on (the depends=
    field each module carries), dependencies first."""
    files = {}
    for path in kernel_tree.glob("lib/modules/*/kernel/**/*.ko*"):
        files[path.name.split(".ko")[0].replace("-", "_")] = path
    ordered: list[Path] = []

    def visit(name: str) -> None:
        path = files[name.replace("-", "_")]
        if path in ordered:
            return
        data = path.read_bytes()
        if path.name.endswith(".ko.xz"):
            data = lzma.decompress(data)
        found = re.search(rb"depends=([\w,-]*)\0", data)
        for dependency in (found.group(1).decode().split(",") if found else []):
            if dependency:
                visit(dependency)
        ordered.append(path)

    for name in wanted:
        visit(name)
    return ordered
