#!/usr/bin/env sh
# What `make demo` and `make test` need from the machine (README, "Prerequisites"), checked before
# anything runs, so that a missing tool is named at once instead of failing a step 20 minutes in.
#   scripts/prereqs.sh demo|test      (PYTHON: the interpreter the virtualenv is made from)
# Exits 1 naming everything missing; prints what the optional Docker step will do.
set -u
goal=${1:-test}
python=${PYTHON:-python3}
missing=""
need() { missing="$missing
  - $1"; }

if ! command -v "$python" >/dev/null 2>&1; then
  need "Python 3.11+ ($python not found)"
elif ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  need "Python 3.11+ ($python is $("$python" -c 'import sys; print(sys.version.split()[0])' 2>&1))"
elif ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  need "Python's venv module for $python (Debian and Ubuntu: apt-get install python3-venv)"
fi
if ! command -v java >/dev/null 2>&1; then
  need "Java 17+ (Debian and Ubuntu: apt-get install openjdk-17-jdk-headless)"
else
  java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
  case ${java_major%%.*} in
    ''|*[!0-9]*) need "Java 17+ (java -version did not say which release it is)" ;;
    *) [ "${java_major%%.*}" -ge 17 ] || need "Java 17+ (found $java_major)" ;;
  esac
  if [ "$goal" = test ] && ! java --list-modules 2>/dev/null | grep -q '^jdk.compiler@'; then
    need "a Java JDK, not only a JRE: the interop tests run Java sources (apt-get install openjdk-17-jdk-headless)"
  fi
fi
command -v mvn >/dev/null 2>&1 || need "Maven, which downloads the RocketMQ jars (apt-get install maven)"
if [ "$goal" = test ]; then
  command -v openssl >/dev/null 2>&1 || need "openssl, for the TLS tests' certificates (apt-get install openssl)"
fi

if [ -n "$missing" ]; then
  echo "make $goal cannot run here; missing (see README.md, Prerequisites):$missing" >&2
  exit 1
fi
if [ "$goal" = test ]; then
  if docker info >/dev/null 2>&1; then
    echo "prerequisites: ok; a Docker engine answers, so the docker-backend step will run"
  else
    echo "prerequisites: ok; no Docker engine answers, so the docker-backend step will be skipped"
  fi
else
  echo "prerequisites: ok"
fi
