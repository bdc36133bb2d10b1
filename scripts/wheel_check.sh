#!/usr/bin/env bash
# `make wheel-check`: rocketmq-py installs and runs as shipped.
#
# Builds the sdist and the wheel (`python -m build`: the wheel is built from the sdist), checks what the
# wheel holds, installs it with its spark extra into a fresh virtualenv (no editable install), and then,
# from a directory outside the repository (so the source tree is not on sys.path) and against a
# one-broker cluster started by the installed package's own testing kit (`python -m rocketmq_py.testing
# up`, jars from the cache `make jars` fills): the README's quickstart (examples/quickstart.py: a send
# and a consume) and a Spark read of its messages with `spark.read.format("rocketmq")` and no register
# call (pyspark's discovery of the installed package). The cluster is stopped on exit, whatever happened.
#
# Environment: PYTHON makes the fresh virtualenv (default python3); BUILD_PYTHON has `build` installed
# (default .venv/bin/python, the dev extra); KEEP=1 keeps the work directory for a look afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
BUILD_PYTHON=${BUILD_PYTHON:-$root/.venv/bin/python}
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-py-wheel-check.XXXXXX")
venv=$work/venv
run=$work/run  # the working directory of everything the installed package runs
mkdir -p "$run"
cluster_started=

step() { printf '== %s (%d s)\n' "$1" $(($(date +%s) - started)); }

finish() {
  local rc=$?
  if [ -n "$cluster_started" ]; then
    step "stopping the cluster"
    "$venv/bin/python" -m rocketmq_py.testing down || rc=1
  fi
  if [ -n "${KEEP:-}" ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
  if [ "$rc" = 0 ]; then echo "wheel check passed in $(($(date +%s) - started)) s"; else echo "wheel check FAILED"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT  # so that an interrupted run still stops its cluster
trap 'exit 143' TERM

# Nothing from the caller's environment may point the installed package at the source tree or at
# another cluster.
unset PYTHONPATH ROCKETMQ_NAMESRV ROCKETMQ_BACKEND VIRTUAL_ENV
# The testing kit keeps its jars and its registry of running clusters in one cache directory, and
# `down` stops every detached cluster of the registry. A private cache holding the shared one's jars
# (dist/, m2/) makes `up` start a cluster of our own and `down` stop that one only.
shared_cache=${ROCKETMQ_PY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-py}
export ROCKETMQ_PY_CACHE=$work/cache
mkdir -p "$shared_cache/dist" "$shared_cache/m2" "$ROCKETMQ_PY_CACHE"
ln -s "$shared_cache/dist" "$ROCKETMQ_PY_CACHE/dist"
ln -s "$shared_cache/m2" "$ROCKETMQ_PY_CACHE/m2"

step "building the sdist and the wheel"
if ! "$BUILD_PYTHON" -m build --outdir "$work/dist" "$root" >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  exit 1
fi
# The build's own lines name every file it copies (rocketmq_py/_deprecation.py among them): only
# the other lines can be a warning.
if grep -vE '^(copying|adding|creating) ' "$work/build.log" | grep -i 'deprecat'; then
  echo "the build warns about deprecated metadata (above)"
  exit 1
fi
echo "  ok: the build printed no deprecation warning"
"$BUILD_PYTHON" "$root/scripts/wheel_check.py" contents "$work/dist"
wheel=$(ls "$work"/dist/rocketmq_py-*.whl)

step "installing the wheel with its spark extra into a fresh virtualenv"
"$PYTHON" -m venv "$venv"
"$venv/bin/python" -m pip install -q "${wheel}[spark]"
cd "$run"
cp "$root/scripts/wheel_check.py" "$run/"
"$venv/bin/python" wheel_check.py installed
"$venv/bin/rocketmq-py" --help >/dev/null
echo "  ok: the rocketmq-py command runs"

step "starting a cluster with the installed testing kit"
cluster_started=1
"$venv/bin/python" -m rocketmq_py.testing up --brokers 1 | tee "$run/up.log"
namesrv=$(sed -n 's/^ROCKETMQ_NAMESRV=//p' "$run/up.log" | tail -1)
[ -n "$namesrv" ] || { echo "up printed no ROCKETMQ_NAMESRV line"; exit 1; }

step "the README quickstart (examples/quickstart.py) from $run"
cp "$root/examples/quickstart.py" "$run/"
ROCKETMQ_NAMESRV=$namesrv "$venv/bin/python" quickstart.py >"$run/quickstart.log" 2>&1 || {
  cat "$run/quickstart.log"
  exit 1
}
grep "messages consumed" "$run/quickstart.log" | sed 's/^/  ok: quickstart: /'
topics=$(ROCKETMQ_NAMESRV=$namesrv "$venv/bin/python" -m rocketmq_py.testing mqadmin topicList)
topic=$(printf '%s\n' "$topics" | grep -x 'QuickstartTopic[0-9]*' || true)
[ -n "$topic" ] && [ "$(printf '%s\n' "$topic" | wc -l)" = 1 ] || {
  printf 'expected one QuickstartTopic* in the topic list:\n%s\n' "$topics"
  exit 1
}
echo "  ok: the quickstart's topic: $topic"

step "spark.read.format(\"rocketmq\") without register, from $run"
PYSPARK_PYTHON=$venv/bin/python PYSPARK_DRIVER_PYTHON=$venv/bin/python \
  "$venv/bin/python" wheel_check.py spark-read --namesrv "$namesrv" --topic "$topic" --bodies-from quickstart.log
