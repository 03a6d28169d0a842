"""The benchmark corpus: the 4,231 real robots.txt files of Protego 0.7.0's
test data, downloaded once (as the source distribution) into ``.cache/``.

Also read by tests/test_differential.py; ``python -m benchmarks._corpus``
(run by scripts/test.sh) fetches it when it is missing.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "protego"
SDIST = "protego-0.7.0.tar.gz"
DATA = CACHE / "test_data"


def corpus() -> list[tuple[str, bytes]]:
    """``(host, body)`` of every robots.txt, sorted by host."""
    if not DATA.is_dir():
        _fetch()
    return sorted(
        (path.name, path.read_bytes()) for path in DATA.iterdir() if path.is_file()
    )


def _fetch() -> None:
    sdist = CACHE / SDIST
    if not sdist.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                "protego==0.7.0",
                "-d",
                str(CACHE),
            ],
            check=True,
        )
    prefix = "protego-0.7.0/tests/test_data/"
    partial = CACHE / "test_data.partial"
    partial.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.startswith(prefix):
                source = archive.extractfile(member)
                if source is not None:
                    (partial / member.name[len(prefix) :]).write_bytes(source.read())
    partial.rename(DATA)


if __name__ == "__main__":
    print(f"Protego's robots.txt corpus: {len(corpus())} files in {DATA}")
