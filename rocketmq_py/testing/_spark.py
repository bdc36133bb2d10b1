"""Spark beyond ``local[N]``: a standalone cluster and a Spark Connect server, on 127.0.0.1.

Both are started from the Spark distribution that the ``pyspark`` package carries (its ``bin`` and
``jars``), so they need nothing besides ``pip install pyspark`` and Java:

- :class:`SparkStandalone`: a master and ``workers`` workers (``spark-class ...deploy.master.Master``
  and ``...deploy.worker.Worker``), each worker with its own JVM, so the executors (one per worker)
  run in separate JVMs with their own Python workers, as on a real cluster. Drivers connect with
  :attr:`SparkStandalone.master_url` and the settings of :func:`loopback_conf`.
- :class:`SparkConnectServer`: ``org.apache.spark.sql.connect.service.SparkConnectServer`` through
  ``spark-submit`` (what ``sbin/start-connect-server.sh`` runs), with its own ``local[N]`` master;
  clients use ``SparkSession.builder.remote(server.url)``.

Everything binds to 127.0.0.1 (``SPARK_LOCAL_IP``, ``--host``, the driver's bind address and the
Connect server's gRPC address), so no traffic leaves loopback. The JVMs die with the Python process
that started them (as the broker JVMs do); their logs are kept in the work directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Final

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import cache_dir
from rocketmq_py.testing._processes import JvmProcess, wait_for_line
from rocketmq_py.testing._settings import pick_port_block

__all__ = ["SparkConnectServer", "SparkStandalone", "loopback_conf", "spark_home", "worker_python"]

_CONNECT_MAIN: Final = "org.apache.spark.sql.connect.service.SparkConnectServer"


def spark_home() -> Path:
    """The Spark distribution inside the installed ``pyspark`` package (``SPARK_HOME`` wins)."""
    explicit = os.environ.get("SPARK_HOME")
    if explicit:
        return Path(explicit)
    try:
        import pyspark
    except ImportError as exc:
        raise ClusterError("Spark needs pyspark (pip install rocketmq-py[spark])") from exc
    return Path(pyspark.__file__).parent


_WORKER_PYTHON: Final = """#!/bin/sh
# Written by rocketmq_py.testing.worker_python(): {python} without Spark's own zips on PYTHONPATH.
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case "$entry" in
    {lib}/pyspark.zip|{lib}/py4j-*-src.zip) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
unset IFS
PYTHONPATH=$kept
export PYTHONPATH
exec {python} "$@"
"""


def worker_python(python: str | None = None, directory: Path | None = None) -> str:
    """An interpreter for Spark's Python workers that imports the installed ``pyspark``, not its zip.

    Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on every Python
    worker's ``PYTHONPATH``. A zip holds no compiled files, so each worker compiles pyspark from
    source as it starts: 0.9 CPU-s here, against 0.26 s from the installed package, and a worker
    Spark starts on its own (a stream's source runner, ``PythonWorkerFactory.createSimpleWorker``)
    must connect back within a fixed 10 s, which a loaded two-core machine can miss ("Python worker
    failed to connect back"). When ``SPARK_HOME`` is the installed package's own directory (the
    ``pip install pyspark`` layout, :func:`spark_home`), the zip holds the same files: the script
    written here drops the two zips from ``PYTHONPATH`` and runs ``python`` (default: this one).
    Elsewhere (a Spark distribution, Windows) it returns ``python`` itself.

    Args:
        python: the interpreter to run.
        directory: where to write the script (default: one per interpreter and Spark home in the
            cache, :func:`rocketmq_py.testing.cache_dir`).
    """
    python = python or sys.executable
    try:
        import pyspark
    except ImportError:
        return python
    home = spark_home()
    if os.name != "posix" or home.resolve() != Path(pyspark.__file__).parent.resolve():
        return python
    lib = home / "python" / "lib"
    for part in (str(lib), python):
        if any(c in part for c in " \t\n'\"$`\\*?[]"):
            return python  # keep the script's unquoted words plain
    text = _WORKER_PYTHON.format(python=python, lib=lib)
    if directory is None:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        directory = cache_dir() / "spark-worker-python" / digest
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "python"
    if not script.exists() or script.read_text() != text:
        partial = directory / f".python.{os.getpid()}"
        partial.write_text(text)
        partial.chmod(0o755)
        partial.replace(script)  # atomic: a worker never runs half a script
    return str(script)


def loopback_conf(python: str | None = None) -> dict[str, str]:
    """Driver settings that keep Spark on 127.0.0.1, with ``python`` (default: this one) on workers.

    Spark otherwise warns that the host name resolves to a loopback address and binds the driver to
    the machine's external interface.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.pyspark.python": python or sys.executable,
        "spark.pyspark.driver.python": python or sys.executable,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def _env(home: Path, workdir: Path, python: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="127.0.0.1",
        SPARK_LOG_DIR=str(workdir / "logs"),
        SPARK_WORKER_DIR=str(workdir / "work"),
        SPARK_LOCAL_DIRS=str(workdir / "tmp"),
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
    )
    return env


class _Launcher:
    """A work directory and the JVMs started in it; stops them on exit."""

    def __init__(self, workdir: Path | None, python: str | None, prefix: str) -> None:
        self._own_dir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix=prefix)) if workdir is None else workdir
        self.python = python or sys.executable
        self.home = spark_home()
        self.env = _env(self.home, self.workdir, self.python)
        self._procs: list[JvmProcess] = []

    def _jvm(self, name: str, argv: list[str], extra_env: Mapping[str, str] | None = None) -> JvmProcess:
        proc = JvmProcess(
            name,
            argv,
            log_path=self.workdir / "logs" / f"{name}.log",
            env={**self.env, **(extra_env or {})},
            cwd=self.workdir,
            die_with_parent=True,
        )
        proc.start()
        self._procs.append(proc)
        return proc

    def stop(self) -> None:
        """Stop every JVM (workers and executors first), then remove a temporary work directory."""
        for proc in reversed(self._procs):
            proc.terminate()
        self._procs.clear()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, name: str, lines: int = 40) -> str:
        """The last lines of JVM ``name``'s log."""
        for proc in self._procs:
            if proc.name == name:
                return proc.tail(lines)
        return ""


class SparkStandalone(_Launcher):
    """A Spark standalone master and ``workers`` workers on 127.0.0.1.

    Args:
        workers: workers started by :meth:`start` (more with :meth:`add_worker`).
        worker_cores: cores each worker offers (one executor per worker with ``spark.executor.cores``
            equal to it).
        worker_memory: memory each worker offers its executors.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        workdir: Path | None = None,
        python: str | None = None,
        boot_timeout: float = 120.0,
    ) -> None:
        super().__init__(workdir, python, "rocketmq-py-spark-")
        self._workers = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self._boot_timeout = boot_timeout
        self._port = 0
        self._ui_port = 0
        self._started_workers = 0

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``, for ``SparkSession.builder.master(...)`` or ``--master``."""
        return f"spark://127.0.0.1:{self._port}"

    def start(self) -> SparkStandalone:
        """Start the master and the workers; return once every worker registered."""
        taken: set[int] = set()
        self._port = pick_port_block([0], taken)
        self._ui_port = pick_port_block([0], taken)
        try:
            master = self._jvm(
                "master",
                [
                    str(self.home / "bin" / "spark-class"),
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self._port),
                    "--webui-port",
                    str(self._ui_port),
                ],
                {"SPARK_DAEMON_MEMORY": "256m"},
            )
            wait_for_line(master, "I have been elected leader", self._boot_timeout, "the Spark master")
            for _ in range(self._workers):
                self.add_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self) -> None:
        """Start one more worker and wait until the master lists it alive."""
        self._started_workers += 1
        number = self._started_workers
        self._jvm(
            f"worker-{number}",
            [
                str(self.home / "bin" / "spark-class"),
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.worker_cores),
                "--memory",
                self.worker_memory,
                "--webui-port",
                "0",
                "--work-dir",
                str(self.workdir / "work" / f"worker-{number}"),
                self.master_url,
            ],
            {"SPARK_DAEMON_MEMORY": "256m"},
        )
        self.wait_for_workers(number)

    def alive_workers(self) -> int:
        """Workers the master lists as ALIVE (from its JSON status page)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self._ui_port}/json/", timeout=5) as reply:
            status = json.load(reply)
        return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")

    def wait_for_workers(self, count: int) -> None:
        """Wait until ``count`` workers are alive."""
        deadline = time.monotonic() + self._boot_timeout
        alive = 0
        while time.monotonic() < deadline:
            try:
                alive = self.alive_workers()
            except OSError:
                alive = 0
            if alive >= count:
                return
            time.sleep(0.2)
        raise ClusterError(
            f"{alive} of {count} Spark workers registered in {self._boot_timeout:.0f} s; last log lines:\n"
            + self.log_tail(f"worker-{self._started_workers}")
        )

    def session_conf(self) -> dict[str, str]:
        """Driver settings for this cluster: loopback, one executor of all its cores per worker."""
        conf = loopback_conf(self.python)
        conf.update(
            {
                "spark.executor.cores": str(self.worker_cores),
                "spark.executor.memory": "512m",
                "spark.cores.max": str(self.worker_cores * self._started_workers),
            }
        )
        return conf

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class SparkConnectServer(_Launcher):
    """A Spark Connect server on 127.0.0.1 with a ``local[cores]`` master of its own.

    Args:
        conf: extra ``--conf`` settings of the server's session (e.g. data-source settings).
    """

    def __init__(
        self,
        *,
        cores: int = 2,
        memory: str = "1g",
        conf: Mapping[str, str] | None = None,
        workdir: Path | None = None,
        python: str | None = None,
        boot_timeout: float = 180.0,
    ) -> None:
        super().__init__(workdir, python, "rocketmq-py-spark-connect-")
        self._cores = cores
        self._memory = memory
        self._conf = dict(conf or {})
        self._boot_timeout = boot_timeout
        self._port = 0

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:<port>``, for ``SparkSession.builder.remote(...)``."""
        return f"sc://127.0.0.1:{self._port}"

    def start(self) -> SparkConnectServer:
        """Start the server; return once it accepts gRPC clients."""
        self._port = pick_port_block([0], set())
        conf = {
            **loopback_conf(self.python),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self._port),
            "spark.sql.session.timeZone": "UTC",
            **self._conf,
        }
        argv = [
            str(self.home / "bin" / "spark-submit"),
            "--class",
            _CONNECT_MAIN,
            "--name",
            "rocketmq-py Spark Connect server",
            "--master",
            f"local[{self._cores}]",
            "--driver-memory",
            self._memory,
        ]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv.append("spark-internal")
        try:
            server = self._jvm("connect-server", argv)
            wait_for_line(
                server, "Spark Connect server started", self._boot_timeout, "the Spark Connect server"
            )
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> SparkConnectServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
