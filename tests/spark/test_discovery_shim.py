"""pyspark's own discovery finds format ``rocketmq`` through the ``pyspark_rocketmq`` module.

pyspark 4.x (``pyspark/sql/worker/lookup_data_sources.py``) lists top-level modules named
``pyspark_*`` on the Python path and registers each one's ``DefaultSource`` under its ``name()``.
This test runs that same lookup in a subprocess with the project on a plain path entry (as a
regular, non-editable install puts it in site-packages).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOOKUP = """
import json, pkgutil, importlib
from pyspark.sql.datasource import DataSource
found = {}
for info in pkgutil.iter_modules():
    if info.name.startswith("pyspark_"):
        mod = importlib.import_module(info.name)
        src = getattr(mod, "DefaultSource", None)
        if isinstance(src, type) and issubclass(src, DataSource):
            found[src.name()] = f"{src.__module__}.{src.__qualname__}"
print(json.dumps(found))
"""


def test_pyspark_lookup_finds_rocketmq(spark_extra: None) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", LOOKUP], capture_output=True, text=True, env=env, check=True, cwd="/"
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found.get("rocketmq") == "spark_connector._source.RocketMQDataSource"


def test_default_source_is_the_plain_reader(spark_extra: None) -> None:
    import pyspark_rocketmq
    import spark_connector

    assert pyspark_rocketmq.DefaultSource is spark_connector.RocketMQDataSource
    assert pyspark_rocketmq.DefaultSource.name() == "rocketmq"
