"""The checks of ``scripts/wheel_check.sh`` that are easier in Python (``make wheel-check``).

    python scripts/wheel_check.py contents DIST_DIR
        what the built wheel holds: the three packages with their py.typed, the testing kit, the
        ``rocketmq-py`` console script, the SPDX license and the spark extra; no tests, integration,
        examples, benchmarks or golden vectors
    python wheel_check.py installed
        (copied out of the repository and run by the fresh virtualenv) the three packages come from
        that virtualenv's site-packages, installed from the wheel file (not editable)
    python wheel_check.py spark-read --namesrv H:P --topic T --bodies-from QUICKSTART_LOG
        (copied out of the repository and run by the fresh virtualenv) ``spark.read.format("rocketmq")``
        with no register call reads exactly the bodies the quickstart consumed, with the packages
        imported from that virtualenv on the driver and on the executors

Each check prints one line saying what it saw; the first that fails raises ``SystemExit``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from importlib.metadata import distribution
from pathlib import Path
from types import ModuleType

PACKAGES = ("rocketmq_py", "spark_connector", "pyspark_rocketmq")
#: Files the installed package needs at run time (beyond every package's ``__init__.py``).
REQUIRED = (
    "rocketmq_py/py.typed",
    "spark_connector/py.typed",
    "pyspark_rocketmq/py.typed",
    "rocketmq_py/cli/__init__.py",
    "rocketmq_py/testing/__main__.py",
    "spark_connector/_source.py",
)
#: Top-level folders of the repository that stay out of the wheel.
NOT_SHIPPED = ("tests", "integration", "examples", "benchmarks", "protocol", "scripts")


def ok(what: str) -> None:
    print(f"  ok: {what}", flush=True)


def fail(what: str) -> SystemExit:
    return SystemExit(f"wheel check failed: {what}")


def check_contents(dist: Path) -> None:
    wheels = sorted(dist.glob("rocketmq_py-*.whl"))
    sdists = sorted(dist.glob("rocketmq_py-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise fail(f"expected one wheel and one sdist in {dist}, found {[p.name for p in dist.iterdir()]}")
    ok(f"built {sdists[0].name} ({sdists[0].stat().st_size // 1024} KiB) and {wheels[0].name}")
    with zipfile.ZipFile(wheels[0]) as whl:
        names = whl.namelist()
        [dist_info] = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        metadata = whl.read(f"{dist_info}/METADATA").decode()
        entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
    tops = {n.split("/")[0] for n in names} - {dist_info}
    if tops != set(PACKAGES):
        raise fail(f"top-level entries {sorted(tops)}, expected {sorted(PACKAGES)}")
    ok(f"{len(names)} files, top level: {', '.join(PACKAGES)} and {dist_info}")
    leaked = sorted(n for n in names if n.split("/")[0] in NOT_SHIPPED)
    if leaked:
        raise fail(f"repository folders in the wheel: {leaked[:5]}")
    ok(f"no {', '.join(NOT_SHIPPED)} folder")
    missing = [n for n in (*REQUIRED, *(f"{p}/__init__.py" for p in PACKAGES)) if n not in names]
    if missing:
        raise fail(f"missing from the wheel: {missing}")
    ok("py.typed in all three packages; the CLI, the testing kit and the data source are in")
    if not re.search(r"^\[console_scripts\]\s*\nrocketmq-py = rocketmq_py\.cli:main$", entry_points, re.M):
        raise fail(f"no rocketmq-py console script in entry_points.txt:\n{entry_points}")
    ok("entry point rocketmq-py = rocketmq_py.cli:main")
    if "\nLicense-Expression: Apache-2.0\n" not in metadata or "Classifier: License ::" in metadata:
        raise fail("METADATA has no License-Expression: Apache-2.0 (or a License classifier beside it)")
    if "\nProvides-Extra: spark\n" not in metadata:
        raise fail("METADATA has no spark extra")
    ok("METADATA: License-Expression: Apache-2.0, extra spark")
    if f"{dist_info}/licenses/LICENSE" not in names or "\nLicense-File: LICENSE\n" not in metadata:
        raise fail("the wheel does not ship the license text (.dist-info/licenses/LICENSE, License-File)")
    ok("the license text is in .dist-info/licenses/LICENSE")


def _check_imported_here(*modules: ModuleType) -> Path:
    """``sys.prefix``, after checking that every module in ``modules`` lives under it."""
    prefix = Path(sys.prefix).resolve()
    for module in modules:
        where = Path(module.__file__ or "").resolve()
        if prefix not in where.parents:
            raise fail(f"{module.__name__} comes from {where}, not from {prefix}")
    return prefix


def check_installed() -> None:
    import pyspark_rocketmq
    import rocketmq_py
    import spark_connector

    prefix = _check_imported_here(rocketmq_py, spark_connector, pyspark_rocketmq)
    dist = distribution("rocketmq-py")
    origin = json.loads(dist.read_text("direct_url.json") or "{}")
    if origin.get("dir_info", {}).get("editable") or not origin.get("url", "").endswith(".whl"):
        raise fail(f"rocketmq-py was not installed from a wheel file: {origin}")
    ok(f"rocketmq-py {dist.version} installed from {origin['url'].rsplit('/', 1)[-1]} into {prefix}")


def _bodies(quickstart_log: Path) -> list[str]:
    """The distinct bodies the quickstart printed as consumed (``got 'hello #3' tags=...``)."""
    found = re.findall(r"^got '([^']*)'", quickstart_log.read_text(), re.M)
    if not found:
        raise fail(f"the quickstart printed no consumed message ({quickstart_log})")
    return sorted(set(found))  # a redelivery would print a body twice; the topic holds it once


def check_spark_read(namesrv: str, topic: str, quickstart_log: Path) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import pyspark_rocketmq
    import spark_connector
    from rocketmq_py.testing import loopback_conf

    prefix = _check_imported_here(spark_connector, pyspark_rocketmq)
    ok(f"the driver imports spark_connector and pyspark_rocketmq from {prefix}")
    expected = _bodies(quickstart_log)

    builder = SparkSession.builder.master("local[2]").appName("rocketmq-py-wheel-check")
    for key, value in loopback_conf().items():
        builder = builder.config(key, value)
    spark = (
        builder.config("spark.driver.memory", "512m")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        executor_file = (
            spark.sparkContext.parallelize([0], 1)
            .map(lambda _: __import__("spark_connector").__file__)
            .first()
        )
        if prefix not in Path(str(executor_file)).resolve().parents:
            raise fail(f"executors import spark_connector from {executor_file}")
        ok("executors import spark_connector from the same virtualenv")
        # No spark_connector.register(spark): pyspark's discovery of pyspark_rocketmq must find the format.
        df = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic).load()
        rows = df.select("queue_id", "body").collect()
        bodies = sorted(bytes(r["body"]).decode() for r in rows)
        if bodies != expected:
            raise fail(f"spark.read.format('rocketmq') read {len(bodies)} bodies, expected {len(expected)}")
        ok(f'spark.read.format("rocketmq") without register: {len(rows)} rows = the {len(expected)} consumed')
        # A filter in a session without filter pushdown (pyspark's default): whole ranges, Spark filters.
        queue = rows[0]["queue_id"]
        filtered = df.where(F.col("queue_id") == queue).count()
        if filtered != sum(r["queue_id"] == queue for r in rows):
            raise fail(f"queue_id = {queue} read {filtered} rows")
        ok(f"a filtered read (queue_id = {queue}, pushdown off) gives the same {filtered} rows")
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    contents = sub.add_parser("contents")
    contents.add_argument("dist", type=Path)
    sub.add_parser("installed")
    spark = sub.add_parser("spark-read")
    spark.add_argument("--namesrv", required=True)
    spark.add_argument("--topic", required=True)
    spark.add_argument("--bodies-from", type=Path, required=True, help="the quickstart's output")
    args = parser.parse_args(argv)
    if args.command == "contents":
        check_contents(args.dist)
    elif args.command == "installed":
        check_installed()
    else:
        check_spark_read(args.namesrv, args.topic, args.bodies_from)


if __name__ == "__main__":
    main()
