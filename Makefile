# The two commands of the README: `make demo` and `make test`. Both work on a fresh clone: they create
# the virtualenv, install the project with its extras, and download the RocketMQ jars on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

# Broker releases `make test` runs besides the default (5.3.3, the whole suite): the newest 4.x and
# the newest 5.x broker on Maven Central (5.5.1 does not resolve there).
EXTRA_VERSIONS ?= 4.9.7 5.5.0
# What runs on each extra release: the files whose behaviour depends on the broker (send, timer
# and delay messages, transactions, push and lite pull, timestamp positioning, raw remoting, Spark
# read, recall, assign filters, request-reply). The launcher-, CLI-, ACL/TLS- and fault-specific files run on the default release only.
# On 5.x releases the 5.x-only features run too (POP consumption, message trace with the Java client).
# test_producer.py comes last, in a run of its own: once a transaction has ended on a 5.5.0 broker, the broker's
# TransactionalOpBatchService thread spins on a core for as long as the broker runs
# (apache/rocketmq#10966), and everything after it ran on a machine with no core left (the 5.5.0
# step took 450 s with the file first, its first Spark read 62 s instead of 16 s).
VERSION_TESTS ?= integration/test_push_consumer.py \
	integration/test_lite_pull_consumer.py integration/test_remoting_raw.py integration/test_spark_read.py \
	integration/test_recall.py integration/test_lite_pull_assign_filter.py integration/test_request_reply.py
VERSION_TESTS_5X ?= integration/test_pop.py integration/test_pop_modes.py integration/test_trace.py
VERSION_TESTS_LAST ?= integration/test_producer.py
# Left out there: the producer's client-side fault tests (a paused broker, the NameServer down for
# a minute), which do not depend on the broker's release and take about 140 s; and the Spark reads
# that only exercise the connector's own planning (partitioning, option checks, column pruning,
# registration, Spark-side filters): about 15 s each, and the 5.5.0 step took 720 s with them.
# Also left out: the two Spark data-loss reads (failOnDataLoss true / false). They need a third,
# one-broker cluster that deletes its commit log (started beside the module's own), and the
# decision they check is the connector's (the start offset against the broker's GET_MIN_OFFSET
# answer, which every release gives the same way): with them the 5.5.0 step took 600 s, 95 s of
# it the first Spark read's setup on a machine busy with both clusters.
VERSION_SKIP ?= not paused_broker_is_routed_around and not without_a_nameserver \
	and not partitions_follow_the_allocation_strategy and not max_records_per_partition_splits_ranges \
	and not filters_narrow_the_read and not a_plain_registration_reads_the_same \
	and not bad_option_is_named and not a_schema_picks_the_columns and not data_loss
# The test clusters' JVMs (RMQ_JVM_OPTS, rocketmq_py/testing/_jvm_nodes.py) compile with C1 only,
# on one compiler thread and one GC thread: a short-lived test broker spends much of its CPU in C2
# compiling code it runs a few thousand times; measured on a 2-broker cluster's start and 5,000
# messages, 15-16 CPU-s instead of 18-20. Benchmarks start their clusters without it.
TEST_JVM_OPTS ?= -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1
# And a 20 ms timer slack (RMQ_TIMER_SLACK_MS, rocketmq_py/testing/_processes.py): an idle broker's
# threads poll on 1-10 ms sleeps (ReputMessageService every 1 ms); with the slack the kernel wakes
# them together, and an idle 5.3.3 broker uses 2.2 CPU-s a minute instead of 4.4. CI runs about 70
# brokers for 9,600 broker-seconds in all, most of them idle between tests.
TEST_TIMER_SLACK_MS ?= 20
INTEGRATION_ENV = RMQ_REQUIRE_BROKER=1 RMQ_JVM_OPTS="$(TEST_JVM_OPTS)" RMQ_TIMER_SLACK_MS=$(TEST_TIMER_SLACK_MS) \
	PYSPARK_PYTHON=$(abspath $(BIN)/python)
# The suite runs on pytest-xdist workers: the integration tests mostly wait on brokers (timeouts,
# long polls, rebalances), so several workers share two cores well. Each module runs whole on one
# worker and the Spark modules together on one (integration/conftest.py). The jar backend's session
# cluster is one for all the workers, started by pytest-xdist's controller once a worker collected an
# integration test (integration/_session.py); a module that pauses, kills or reconfigures brokers
# gets one of its own. `make test XDIST=` runs everything in one process.
XDIST ?= -n 3 --dist loadgroup --no-loadscope-reorder
# Each pytest step of `make test` also writes its results as JUnit XML under reports/ (per-test
# times: `python scripts/durations.py reports/main.xml` prints the seconds per file).
REPORTS ?= reports

# The docker backend (rocketmq_py.testing, ROCKETMQ_BACKEND=docker): these files once more with the
# NameServer and brokers in containers, from rocketmq-py/rocketmq:<version> (built here by
# `build-image`, since no image registry answers; elsewhere the backend pulls apache/rocketmq).
DOCKER_TESTS ?= integration/test_cluster_smoke.py integration/test_producer.py integration/test_push_consumer.py \
	integration/test_docker_proxy.py

# Through a 5.x Proxy (RMQ_THROUGH_PROXY=1, integration/conftest.py): these files once more, the
# session cluster with a Proxy in cluster mode in front and every client given the Proxy as its
# NameServer. A test that needs a direct route is marked direct_route(reason) and skipped with it.
PROXY_TESTS ?= integration/test_producer.py integration/test_push_consumer.py integration/test_lite_pull_consumer.py \
	integration/test_request_reply.py integration/test_pop.py integration/test_spark_read.py \
	integration/test_spark_write.py integration/test_spark_stream.py integration/test_recall.py \
	integration/test_push_broadcast_cluster.py integration/test_cli.py integration/test_cli_group.py

.PHONY: demo test prereqs install jars jars-versions lint unit integration versions proxy docker docker-image docker-tests down clean wheel-check docs

# What the machine needs (README, "Prerequisites"), checked first by `make demo` and `make test`: a
# missing tool is named at once instead of failing a step 20 minutes in (scripts/prereqs.sh).
PREREQS_FOR ?= test
prereqs:
	@PYTHON=$(PYTHON) sh scripts/prereqs.sh $(PREREQS_FOR)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,spark,connect,docs]"
	touch $(STAMP)

install: $(STAMP)

# Apache RocketMQ NameServer, broker, mqadmin, benchmark and (5.x) Proxy jars from Maven Central
# (cached per user).
jars: install
	$(BIN)/python -m rocketmq_py.testing fetch

jars-versions: jars
	for v in $(EXTRA_VERSIONS); do $(BIN)/python -m rocketmq_py.testing fetch --version $$v || exit 1; done

# Start a local two-broker cluster, produce 10,000 messages, consume them with a group of three,
# read the topic with Spark, stop.
demo: PREREQS_FOR = demo
demo: prereqs jars
	$(BIN)/python examples/demo.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python scripts/gen_facades.py --check

# Everything: lint, types, the documentation site (strict), fast tests and the integration tests
# against a real cluster (5.3.3), then the broker-dependent integration files on each of
# EXTRA_VERSIONS, the docker backend, and the package built and installed as a wheel.
# (--durations: the slowest tests in the log, so that CI time is easy to follow.)
test: prereqs jars-versions lint docs
	mkdir -p $(REPORTS)
	$(INTEGRATION_ENV) $(BIN)/pytest $(XDIST) --durations=40 --junitxml=$(REPORTS)/main.xml \
		--ignore=integration/test_docker_proxy.py
	$(MAKE) --no-print-directory versions
	$(MAKE) --no-print-directory proxy
	$(MAKE) --no-print-directory docker
	$(MAKE) --no-print-directory wheel-check

# VERSION_TESTS (and on 5.x VERSION_TESTS_5X) on the xdist workers, then VERSION_TESTS_LAST alone, on
# its own cluster, on each of EXTRA_VERSIONS (`make versions EXTRA_VERSIONS=4.9.7`).
# An external cluster (ROCKETMQ_NAMESRV) has one release, not ours to pick: the loop is skipped.
versions: jars-versions
	@if [ -n "$$ROCKETMQ_NAMESRV" ]; then echo "ROCKETMQ_NAMESRV is set: no broker-release matrix"; exit 0; fi; \
	for v in $(EXTRA_VERSIONS); do \
		echo "== integration tests on RocketMQ $$v"; \
		case $$v in 5.*) only5="$(VERSION_TESTS_5X)";; *) only5="";; esac; \
		ROCKETMQ_VERSION=$$v $(INTEGRATION_ENV) $(BIN)/pytest $(XDIST) --durations=10 $(VERSION_TESTS) $$only5 \
			--junitxml=$(REPORTS)/versions-$$v.xml \
			-k "$(VERSION_SKIP)" || exit 1; \
		ROCKETMQ_VERSION=$$v $(INTEGRATION_ENV) $(BIN)/pytest --durations=5 $(VERSION_TESTS_LAST) \
			--junitxml=$(REPORTS)/versions-$$v-last.xml \
			-k "$(VERSION_SKIP)" || exit 1; \
	done

# PROXY_TESTS with the clients going through a Proxy in front of the session cluster (5.3.3).
proxy: jars
	@if [ -n "$$ROCKETMQ_NAMESRV" ]; then echo "ROCKETMQ_NAMESRV is set: no Proxy run"; exit 0; fi; \
	echo "== integration tests through a Proxy"; \
	RMQ_THROUGH_PROXY=1 $(INTEGRATION_ENV) $(BIN)/pytest $(XDIST) --durations=10 $(PROXY_TESTS) \
		--junitxml=$(REPORTS)/proxy.xml

# DOCKER_TESTS through the docker backend when a Docker engine answers; CI (which starts one) fails
# without it, elsewhere the step says it is skipped.
docker: jars
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory docker-tests; \
	elif [ -n "$$CI" ]; then echo "CI: no Docker engine answers; the docker-backend tests need one"; exit 1; \
	else echo "== no Docker engine answers here: docker-backend tests skipped (CI runs them)"; fi

# The image: apache/rocketmq where a registry answers, else the local one (built once per machine
# with debootstrap, as root: the recipe's hash is a label; a current image is reused).
docker-image: jars
	$(BIN)/python -m rocketmq_py.testing build-image --if-needed

docker-tests: docker-image
	@echo "== integration tests through the docker backend"
	ROCKETMQ_BACKEND=docker $(INTEGRATION_ENV) $(BIN)/pytest $(XDIST) $(DOCKER_TESTS) -k "$(VERSION_SKIP)" \
		--junitxml=$(REPORTS)/docker.xml
	@echo "== examples/test_with_testcontainers.py (what a user copies into their own tests)"
	ROCKETMQ_BACKEND=docker $(BIN)/pytest examples/test_with_testcontainers.py

unit: install
	$(BIN)/pytest tests

integration: jars
	$(INTEGRATION_ENV) $(BIN)/pytest integration

down: install
	$(BIN)/python -m rocketmq_py.testing down

# The package as users get it: build the sdist and the wheel, check the wheel's contents, install it with
# its spark extra into a fresh virtualenv, and from outside the source tree run the quickstart and a
# Spark read (format "rocketmq" found by pyspark's discovery) against a cluster the installed package
# starts and stops (scripts/wheel_check.sh). The last step of `make test`.
wheel-check: jars
	PYTHON=$(PYTHON) BUILD_PYTHON=$(abspath $(BIN)/python) bash scripts/wheel_check.sh

# The documentation site (mkdocs.yml, docs/) into site/: strict, so a broken link or anchor, a page
# missing from the nav, a stale CLI or Spark options table, or a docstring naming a parameter that
# does not exist fails it. `$(BIN)/mkdocs serve` previews it.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build site $(REPORTS) *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
