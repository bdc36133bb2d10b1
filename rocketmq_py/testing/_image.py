"""A local image laid out like ``apache/rocketmq:<version>``, built where no image registry answers.

The Docker backend runs ``apache/rocketmq:<version>`` unchanged wherever that image can be pulled.
On machines with a Docker engine but no registry (air-gapped CI, these build machines) it runs
``rocketmq-py/rocketmq:<version>`` instead, built here from what such machines can reach:

1. ``rocketmq-py/debian-jre:bookworm``: a Debian bookworm root filesystem made by ``debootstrap``
   (``minbase`` plus ``openjdk-17-jre-headless``) with the user ``rocketmq`` (uid and gid 3000, as
   upstream), imported with the engine's import API.
2. ``rocketmq-py/rocketmq:<version>``: that base plus the RocketMQ server jars (NameServer, broker
   and mqadmin, resolved from Maven Central as the jar backend does) in
   ``/home/rocketmq/rocketmq-<version>/lib`` and the scripts ``bin/mqnamesrv``, ``bin/mqbroker`` and
   ``bin/mqadmin``; for a 5.x release also the Proxy (``rocketmq-proxy`` and its dependencies, as
   the jar backend resolves them) in ``lib-proxy`` and ``bin/mqproxy``. The layout is the upstream image's: ``ROCKETMQ_HOME`` there, working directory
   ``bin``, user ``rocketmq``; the scripts take the same arguments and add ``JAVA_OPT_EXT`` to the
   JVM's options, so ``sh mqnamesrv``, ``sh mqbroker -c FILE`` and ``sh mqproxy -pc FILE -pm cluster``
   work in both images.

Each image carries a label with a hash of its recipe; a present image with the same hash is reused
(building is once per machine: about a minute for the base, seconds per version).
``python -m rocketmq_py.testing build-image --version V`` builds from a shell.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import DEFAULT_VERSION, resolve_proxy, resolve_server

__all__ = [
    "BASE_IMAGE",
    "LOCAL_REPOSITORY",
    "UPSTREAM_REPOSITORY",
    "build_image",
    "engine_problem",
    "ensure_image",
    "image_for",
    "local_image",
]

#: The official image, used wherever it is present or can be pulled.
UPSTREAM_REPOSITORY: Final = "apache/rocketmq"
#: The image this module builds, preferred when present (it exists only where someone built it).
LOCAL_REPOSITORY: Final = "rocketmq-py/rocketmq"
BASE_IMAGE: Final = "rocketmq-py/debian-jre:bookworm"
_LABEL: Final = "org.rocketmq-py.recipe"
_SUITE: Final = "bookworm"
_MIRROR: Final = os.environ.get("ROCKETMQ_PY_DEBIAN_MIRROR", "http://deb.debian.org/debian")
_PACKAGES: Final = "openjdk-17-jre-headless"
_UID: Final = 3000

# The JVM flags the jar backend uses (Java 17 needs the opens for RocketMQ's direct buffers).
_JAVA_FLAGS: Final = (
    "-XX:+UseG1GC "
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED "
    "--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED "
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED"
)

_SCRIPT: Final = """#!/bin/sh
# {what} of this image, started as the apache/rocketmq image's bin/{name} is: the same arguments,
# JAVA_OPT_EXT added to the JVM options (JAVA_OPT replaces the default heap).
home=$(cd "$(dirname "$0")/.." && pwd)
export ROCKETMQ_HOME="${{ROCKETMQ_HOME:-$home}}"
exec java ${{JAVA_OPT:-{heap}}} {flags} $JAVA_OPT_EXT -Drocketmq.home.dir="$ROCKETMQ_HOME" \\
  -cp "$ROCKETMQ_HOME/{lib}/*" {main} "$@"
"""

_MAINS: Final = {
    "mqnamesrv": ("The NameServer", "-Xms256m -Xmx512m", "org.apache.rocketmq.namesrv.NamesrvStartup"),
    "mqbroker": (
        "A broker",
        "-Xms512m -Xmx1g -XX:MaxDirectMemorySize=1g",
        "org.apache.rocketmq.broker.BrokerStartup",
    ),
    "mqadmin": ("The admin tool", "-Xms64m -Xmx256m", "org.apache.rocketmq.tools.command.MQAdminStartup"),
}
#: The Proxy (5.x): its own jars (``rocketmq-proxy``'s dependencies differ from the server's in a few
#: versions), in ``lib-proxy``.
_PROXY_SCRIPT: Final = (
    "mqproxy",
    "The Proxy",
    "-Xms128m -Xmx384m -XX:MaxDirectMemorySize=256m",
    "org.apache.rocketmq.proxy.ProxyStartup",
)
_PROXY_LIB: Final = "lib-proxy"

_DOCKERFILE: Final = f"""FROM {BASE_IMAGE}
ENV ROCKETMQ_VERSION={{version}} ROCKETMQ_HOME=/home/rocketmq/rocketmq-{{version}} LANG=C.UTF-8
COPY --chown={_UID}:{_UID} rocketmq-{{version}} /home/rocketmq/rocketmq-{{version}}
USER rocketmq
WORKDIR /home/rocketmq/rocketmq-{{version}}/bin
EXPOSE 9876 10909 10911 10912
LABEL {_LABEL}={{recipe}}
"""


def engine_problem() -> str | None:
    """Why the engine's local socket (``DOCKER_HOST`` unix://, or the default) refuses, else None.

    Checked before docker-py connects: on a refused unix socket it leaves the socket unclosed.
    """
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return None
    path = host[len("unix://") :]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(3)
            probe.connect(path)
    except OSError as exc:
        return f"{host}: {exc.strerror or exc}"
    return None


def _client() -> Any:
    try:
        import docker  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:  # pragma: no cover - dev extra missing
        raise ClusterError(
            "building the image needs the docker package (pip install rocketmq-py[dev])"
        ) from exc
    problem = engine_problem()
    if problem is not None:
        raise ClusterError(f"no Docker engine answers: {problem}")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:
        raise ClusterError(f"no Docker engine answers: {exc}") from exc
    return client


def _recipe_hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _labelled(client: Any, tag: str) -> str | None:
    """The recipe label of image ``tag``, ``""`` for an unlabelled one, ``None`` when absent."""
    import docker

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    labels = (image.attrs.get("Config") or {}).get("Labels") or {}
    return str(labels.get(_LABEL, ""))


def local_image(version: str = DEFAULT_VERSION) -> str:
    """The tag of the image this module builds for ``version``."""
    return f"{LOCAL_REPOSITORY}:{version}"


def image_for(version: str, client: Any) -> str:
    """The image the Docker backend runs for ``version``: ours when it was built, else upstream's."""
    local = local_image(version)
    return local if _labelled(client, local) is not None else f"{UPSTREAM_REPOSITORY}:{version}"


def _base_recipe() -> str:
    return _recipe_hash(_SUITE, _MIRROR.rstrip("/").rsplit("/", 1)[-1], _PACKAGES, str(_UID))


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise ClusterError(f"{what} failed ({' '.join(argv[:3])} ... exited {done.returncode}):\n{tail}")


def _build_base(client: Any, log: Callable[[str], None]) -> None:
    recipe = _base_recipe()
    if _labelled(client, BASE_IMAGE) == recipe:
        return
    if shutil.which("debootstrap") is None:
        raise ClusterError("building the base image needs debootstrap (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise ClusterError("debootstrap needs root: run `python -m rocketmq_py.testing build-image` as root")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocketmq-py-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        log(f"debootstrap {_SUITE} with {_PACKAGES} from {_MIRROR}")
        _run(
            ["debootstrap", "--variant=minbase", f"--include={_PACKAGES}", _SUITE, str(root), _MIRROR],
            "debootstrap",
        )
        _run(["chroot", str(root), "groupadd", "-g", str(_UID), "rocketmq"], "groupadd")
        _run(
            [
                "chroot",
                str(root),
                "useradd",
                "-u",
                str(_UID),
                "-g",
                str(_UID),
                "-m",
                "-s",
                "/bin/bash",
                "rocketmq",
            ],
            "useradd",
        )
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (root / leftover).glob("*"):
                if entry.is_file():
                    entry.unlink()
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(root, arcname=".")
        log(f"importing {BASE_IMAGE} ({archive.stat().st_size // 2**20} MiB)")
        repository, tag = BASE_IMAGE.split(":")
        client.api.import_image_from_file(
            str(archive),
            repository=repository,
            tag=tag,
            changes=[f"LABEL {_LABEL}={recipe}", 'CMD ["/bin/bash"]'],
        )
    log(f"{BASE_IMAGE} built in {time.monotonic() - started:.0f} s")


def _scripts(proxy: bool) -> dict[str, str]:
    """``bin/<name>`` -> its text: the NameServer, broker and mqadmin, and ``mqproxy`` with ``proxy``."""
    scripts = {
        name: _SCRIPT.format(what=what, name=name, heap=heap, flags=_JAVA_FLAGS, main=main, lib="lib")
        for name, (what, heap, main) in _MAINS.items()
    }
    if proxy:
        name, what, heap, main = _PROXY_SCRIPT
        scripts[name] = _SCRIPT.format(
            what=what, name=name, heap=heap, flags=_JAVA_FLAGS, main=main, lib=_PROXY_LIB
        )
    return scripts


def _context(version: str, jars: list[Path], proxy_jars: list[Path], recipe: str) -> bytes:
    """The build context: the Dockerfile and rocketmq-<version>/{lib,lib-proxy,bin,conf,store} as a tar."""
    buf = io.BytesIO()
    top = f"rocketmq-{version}"

    def add_text(name: str, text: str, mode: int = 0o644) -> None:
        data = text.encode()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = mode
        tar.addfile(info, io.BytesIO(data))

    def add_dir(name: str) -> None:
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tar.addfile(info)

    with tarfile.open(fileobj=buf, mode="w") as tar:
        add_text("Dockerfile", _DOCKERFILE.format(version=version, recipe=recipe))
        for folder in ("", "/bin", "/lib", "/conf", "/store", "/logs"):
            add_dir(top + folder)
        for name, script in _scripts(bool(proxy_jars)).items():
            add_text(f"{top}/bin/{name}", script, 0o755)
        for jar in jars:
            tar.add(jar, arcname=f"{top}/lib/{jar.name}")
        if proxy_jars:
            add_dir(f"{top}/{_PROXY_LIB}")
        for jar in proxy_jars:
            tar.add(jar, arcname=f"{top}/{_PROXY_LIB}/{jar.name}")
    return buf.getvalue()


def build_image(version: str = DEFAULT_VERSION, *, log: Callable[[str], None] | None = None) -> str:
    """Build (or reuse) ``rocketmq-py/rocketmq:<version>`` and return its tag.

    Needs a Docker engine, Maven (the jars) and, for the base image on first use, root and
    ``debootstrap`` with a reachable Debian mirror (``ROCKETMQ_PY_DEBIAN_MIRROR`` overrides it).

    Raises:
        ClusterError: no engine answers, or a step failed (with its output).
    """
    say = log or (lambda _: None)
    client = _client()
    try:
        _build_base(client, say)
        jars = sorted(resolve_server(version).lib.glob("*.jar"))
        # 4.x has no Proxy; an image built before the Proxy was added has another recipe, so it is rebuilt.
        proxy_jars = [] if version.startswith("4.") else sorted(resolve_proxy(version).lib.glob("*.jar"))
        scripts = "".join(_scripts(bool(proxy_jars)).values())
        recipe = _recipe_hash(
            _base_recipe(),
            version,
            scripts,
            _DOCKERFILE,
            *(j.name for j in jars),
            *(f"{_PROXY_LIB}/{j.name}" for j in proxy_jars),
        )
        tag = local_image(version)
        if _labelled(client, tag) == recipe:
            say(f"{tag} is up to date")
            return tag
        started = time.monotonic()
        context = _context(version, jars, proxy_jars, recipe)
        say(f"building {tag} ({len(jars) + len(proxy_jars)} jars, {len(context) // 2**20} MiB context)")
        try:
            client.images.build(
                fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True, pull=False
            )
        except Exception as exc:
            raise ClusterError(f"building {tag} failed: {exc}") from exc
        say(f"{tag} built in {time.monotonic() - started:.0f} s")
        return tag
    finally:
        client.close()


def ensure_image(version: str = DEFAULT_VERSION, *, log: Callable[[str], None] | None = None) -> str:
    """Make the image the Docker backend runs for ``version`` available, building only if need be.

    A local build already here is kept up to date (:func:`build_image`); else
    ``apache/rocketmq:<version>`` is used when it is here or can be pulled; else (no registry
    answers) ours is built, which needs what :func:`build_image` needs. So a machine with a Docker
    engine and a registry needs neither ``debootstrap`` nor root.

    Returns:
        The image's tag.

    Raises:
        ClusterError: no engine answers, or the build failed.
    """
    say = log or (lambda _: None)
    client = _client()
    try:
        if _labelled(client, local_image(version)) is None:
            upstream = f"{UPSTREAM_REPOSITORY}:{version}"
            if _labelled(client, upstream) is not None:
                say(f"{upstream} is here")
                return upstream
            say(f"pulling {upstream}")
            try:
                client.images.pull(UPSTREAM_REPOSITORY, tag=version)
            except Exception as exc:  # the engine's APIError, or its connection failing
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                say(f"{upstream} cannot be pulled ({reason[:200]}); building {local_image(version)}")
            else:
                return upstream
    finally:
        client.close()
    return build_image(version, log=log)
