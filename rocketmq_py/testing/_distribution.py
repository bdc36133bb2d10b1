"""Apache RocketMQ runtime jars, resolved from Maven Central with Maven and cached per user.

Four classpaths are resolved per version:

- ``server``: ``rocketmq-namesrv``, ``rocketmq-broker`` and ``rocketmq-tools`` (mqadmin) at the
  server version, so the NameServer, the brokers and the admin tool are one release.
- ``client``: ``rocketmq-client`` alone (the Java producer/consumer API, ``AclClientRPCHook``
  included), for our own Java programs such as the golden-vector recorder.
- ``proxy``: ``rocketmq-proxy`` at the server version (5.x only: the Proxy came with 5.0), for
  a Proxy in front of a local cluster.
- ``bench``: ``rocketmq-example`` (the official benchmark ``Producer`` / ``Consumer`` /
  ``BatchProducer``). Maven Central does not carry ``rocketmq-example`` for every release (it has
  4.1.0-4.7.0 and 5.5.0, not 5.3.3), so it has a version of its own: the newest published release of
  the server's major line. It is a client of the same wire protocol, which is what we compare with.

:func:`resolve_maven` resolves any other artifacts (full ``group:artifact:version`` coordinates) the
same way, into the same cache: ``benchmarks/spark_vs_kafka.py`` takes Kafka and Spark's Kafka
connector from it.

Layout of the cache (``$ROCKETMQ_PY_CACHE``, else ``$XDG_CACHE_HOME/rocketmq-py``, else
``~/.cache/rocketmq-py``)::

    m2/                          Maven's local repository (downloads land here, once)
    dist/server-5.3.3/lib/*.jar  copy-dependencies output; ``.complete`` marks a finished copy
    dist/bench-5.5.0/lib/*.jar
    dist/client-5.3.3/lib/*.jar
    dist/kafka-4.1.1/lib/*.jar   :func:`resolve_maven`: any artifacts (here Kafka's, for a benchmark)
    run/                         registry of started clusters (see _processes.py)

A second resolution with a complete ``lib`` directory runs no Maven at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py.errors import ClusterError

__all__ = [
    "DEFAULT_VERSION",
    "Classpath",
    "bench_version_for",
    "cache_dir",
    "find_java",
    "resolve_bench",
    "resolve_client",
    "resolve_maven",
    "resolve_proxy",
    "resolve_server",
]

#: The server release tests run against unless told otherwise (`--version`, ``ROCKETMQ_VERSION``).
DEFAULT_VERSION = "5.3.3"
#: ``rocketmq-example`` releases on Maven Central, newest of each major line.
_BENCH_RELEASES = {"5": "5.5.0", "4": "4.7.0"}
#: Pinned so that resolution does not depend on the Maven installation's default plugin.
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
_GROUP = "org.apache.rocketmq"


def cache_dir() -> Path:
    """The per-user cache directory (created on first use)."""
    explicit = os.environ.get("ROCKETMQ_PY_CACHE")
    if explicit:
        base = Path(explicit)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "rocketmq-py"
    base.mkdir(parents=True, exist_ok=True)
    return base


def find_java() -> str:
    """The ``java`` executable: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ClusterError("no Java runtime found: install Java 17+ or set JAVA_HOME")
    return found


# RocketMQ 4.x reads its logback configuration from $ROCKETMQ_HOME/conf (5.x ships it in the jars).
_LOGBACK_FILES = ("logback_namesrv.xml", "logback_broker.xml", "logback_tools.xml")
_LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{name}.log</file>
    <encoder><pattern>%d{{yyyy-MM-dd HH:mm:ss.SSS}} %-5p [%t] %c{{0}} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def write_home_conf(home: Path) -> None:
    """Give ``home`` (a ROCKETMQ_HOME) the ``conf/logback_*.xml`` files RocketMQ 4.x insists on."""
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for file in _LOGBACK_FILES:
        target = conf / file
        if not target.exists():
            # Written aside and renamed into place: a tool JVM of another process (a pytest-xdist
            # worker) sharing this home never reads a half-written file.
            partial = conf / f".{file}.{os.getpid()}"
            partial.write_text(_LOGBACK.format(name=file.removeprefix("logback_").removesuffix(".xml")))
            os.replace(partial, target)


def bench_version_for(server_version: str) -> str:
    """The ``rocketmq-example`` release used with ``server_version`` (``ROCKETMQ_BENCH_VERSION`` wins)."""
    explicit = os.environ.get("ROCKETMQ_BENCH_VERSION")
    if explicit:
        return explicit
    major = server_version.split(".", 1)[0]
    try:
        return _BENCH_RELEASES[major]
    except KeyError:
        raise ClusterError(f"no rocketmq-example release known for server version {server_version}") from None


@dataclass(frozen=True, slots=True)
class Classpath:
    """A resolved set of jars."""

    name: str
    version: str
    lib: Path
    #: Seconds Maven ran for this resolution; 0.0 when the cache was complete.
    resolve_seconds: float = 0.0

    @property
    def classpath(self) -> str:
        """The ``-cp`` value for the JVM: every jar in :attr:`lib`."""
        return str(self.lib / "*")

    def size_bytes(self) -> int:
        """The jars' total size on disk."""
        return sum(p.stat().st_size for p in self.lib.glob("*.jar"))


def resolve_server(version: str = DEFAULT_VERSION) -> Classpath:
    """NameServer, broker and mqadmin jars for ``version``, downloading them on first use."""
    return _resolve("server", version, ["rocketmq-namesrv", "rocketmq-broker", "rocketmq-tools"])


def resolve_proxy(version: str = DEFAULT_VERSION) -> Classpath:
    """The Proxy's jars (``rocketmq-proxy``, 5.x) for ``version``, downloading them on first use.

    Raises:
        ClusterError: a 4.x release (it has no Proxy), or the jars could not be resolved.
    """
    if version.startswith("4."):
        raise ClusterError(f"RocketMQ {version} has no Proxy: it came with 5.0")
    return _resolve("proxy", version, ["rocketmq-proxy"])


def resolve_bench(server_version: str = DEFAULT_VERSION) -> Classpath:
    """The official benchmark tools' jars that go with ``server_version``."""
    return _resolve("bench", bench_version_for(server_version), ["rocketmq-example"])


def resolve_client(version: str = DEFAULT_VERSION) -> Classpath:
    """The Java client's jars (``rocketmq-client`` and its dependencies) at ``version``.

    Since 5.x this classpath also holds ``org.apache.rocketmq.acl.common.AclClientRPCHook``, so no
    ``rocketmq-acl`` artifact is needed (Maven Central has none for 5.3.3).
    """
    return _resolve("client", version, ["rocketmq-client"])


def resolve_maven(name: str, coordinates: list[str]) -> Classpath:
    """The runtime classpath of any Maven Central artifacts, resolved and cached as RocketMQ's are.

    Args:
        name: the cache entry (``dist/<name>-<version>``, the version of the first coordinate),
            e.g. ``"kafka"``.
        coordinates: full ``group:artifact:version`` coordinates; their runtime dependencies come along.

    Returns:
        The jars in one ``lib`` directory; a second call with the same coordinates runs no Maven.

    Raises:
        ClusterError: a coordinate is not ``group:artifact:version``, Maven is missing and nothing
            is cached, or Maven failed (its last lines in the message).
    """
    parts = [c.split(":") for c in coordinates]
    if not parts or any(len(p) != 3 or not all(p) for p in parts):
        raise ClusterError(f"resolve_maven({name!r}): expected group:artifact:version, got {coordinates}")
    version = parts[0][2]
    listed = ", ".join(coordinates)
    return _copy_dependencies(
        name,
        version,
        coordinates,
        label=f"{name} ({listed})",
        # The coordinates are in the stamp: a cache entry made for other artifacts is resolved again.
        stamp_text="\n".join(coordinates) + "\n",
        missing_hint=f"\nOne of {listed} is not on Maven Central (at that version).",
    )


def _pom(name: str, version: str, artifacts: list[str]) -> str:
    return _coordinates_pom(name, version, [f"{_GROUP}:{a}:{version}" for a in artifacts])


def _coordinates_pom(name: str, version: str, coordinates: list[str]) -> str:
    deps = "\n".join(
        f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{artifact_version}</version></dependency>"
        for group, artifact, artifact_version in (c.split(":") for c in coordinates)
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by rocketmq_py.testing: the runtime classpath of {name} {version} -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.rocketmq-py.cache</groupId>
  <artifactId>{name}</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _resolve(name: str, version: str, artifacts: list[str]) -> Classpath:
    return _copy_dependencies(
        name,
        version,
        [f"{_GROUP}:{a}:{version}" for a in artifacts],
        label=f"RocketMQ {name} {version}",
        stamp_text=f"{version}\n",
        missing_hint=(
            f"\nMaven Central has no {', '.join(artifacts)} {version}: pick a published release "
            "(for 4.x the newest broker on Central is 4.9.7)."
        ),
    )


def _copy_dependencies(
    name: str, version: str, coordinates: list[str], *, label: str, stamp_text: str, missing_hint: str
) -> Classpath:
    """``dist/<name>-<version>/lib``: Maven's copy-dependencies of ``coordinates``, or the cached copy.

    The copy is complete when ``.complete`` holds ``stamp_text``; ``missing_hint`` follows Maven's
    output when it could not find an artifact.
    """
    root = cache_dir()
    dist = root / "dist" / f"{name}-{version}"
    lib = dist / "lib"
    stamp = dist / ".complete"
    if stamp.is_file() and stamp.read_text() == stamp_text and any(lib.glob("*.jar")):
        return Classpath(name, version, lib)
    mvn = shutil.which("mvn")
    if not mvn:
        raise ClusterError(f"the jars of {label} are not cached in {dist} and Maven (mvn) is not installed")
    dist.mkdir(parents=True, exist_ok=True)
    pom = dist / "pom.xml"
    pom.write_text(_coordinates_pom(name, version, coordinates))
    partial = dist / "lib.partial"
    shutil.rmtree(partial, ignore_errors=True)
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        f"-Dmaven.repo.local={root / 'm2'}",
        f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={partial}",
        "-DincludeScope=runtime",
    ]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        hint = missing_hint if "Could not find artifact" in tail else ""
        raise ClusterError(f"resolving {label} with Maven failed:\n{tail}{hint}")
    shutil.rmtree(lib, ignore_errors=True)
    partial.rename(lib)
    stamp.write_text(stamp_text)
    return Classpath(name, version, lib, resolve_seconds=elapsed)
