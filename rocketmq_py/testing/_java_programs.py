"""Single-file Java programs (the interop drivers, ``integration/java/*.java``) compiled once.

``java Program.java`` compiles the source in memory at every run: 2.2 CPU-s here for a driver of the
Java client, and 13 s of wall time on the loaded CI machine, before the program starts. The suite
runs such drivers a few dozen times; :func:`compiled` runs ``javac`` once per source text and
class path into the cache (``java-programs/<digest>``, written beside and renamed into place, so
that pytest-xdist workers compiling the same program at once do not see half of it) and gives the
class path and main class to run instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import cache_dir, find_java

__all__ = ["compiled"]


def compiled(source: Path, classpath: str) -> tuple[str, str] | None:
    """``(class path, main class)`` to run ``source`` compiled, or ``None`` without a ``javac``
    beside ``java`` (a JRE: the caller runs the source itself).

    The main class is the file's name, as a single-file program's first class is by our convention.

    Raises:
        ClusterError: ``javac`` refused the source (its output).
    """
    javac = Path(find_java()).with_name("javac")
    if not javac.is_file():
        return None
    text = source.read_bytes()
    digest = hashlib.sha256(text + b"\0" + classpath.encode()).hexdigest()[:16]
    target = cache_dir() / "java-programs" / f"{source.stem}-{digest}"
    main = source.stem
    if not (target / f"{main}.class").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{main}-", dir=target.parent))
        try:
            done = subprocess.run(
                [
                    str(javac),
                    "-nowarn",
                    "-encoding",
                    "UTF-8",
                    "-d",
                    str(partial),
                    "-cp",
                    classpath,
                    str(source),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                raise ClusterError(f"javac {source} failed:\n{done.stdout}{done.stderr}")
            try:
                os.rename(partial, target)
            except OSError:
                if not (target / f"{main}.class").is_file():  # not another worker's copy: a real failure
                    raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return f"{target}{os.pathsep}{classpath}", main
