# The two commands of the README: `make demo` and `make test`. Both work on a fresh clone: they create
# the virtualenv, install the project with its extras, and download the RocketMQ jars on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test install jars lint unit integration bench down clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,spark]"
	touch $(STAMP)

install: $(STAMP)

# Apache RocketMQ NameServer, broker, mqadmin and benchmark jars from Maven Central (cached per user).
jars: install
	$(BIN)/python -m rocketmq_py.testing fetch

# Start a local two-broker cluster, produce 10,000 messages, consume them with a group of three,
# read the topic with Spark, stop.
demo: jars
	$(BIN)/python examples/demo.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Everything: lint, types, fast tests and the integration tests against a real cluster.
test: jars lint
	RMQ_REQUIRE_BROKER=1 PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/pytest

unit: install
	$(BIN)/pytest tests

integration: jars
	RMQ_REQUIRE_BROKER=1 PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/pytest integration

down: install
	$(BIN)/python -m rocketmq_py.testing down

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
