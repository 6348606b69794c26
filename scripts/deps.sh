#!/usr/bin/env bash
# Installs what herald needs to build and test, if it is missing: libpq, libcurl (with HTTP/2), PostgreSQL,
# PgBouncer, nginx (an HTTP/2 server that answers before it reads a request's body: EarlyAnswerTests), for
# the quiet-hours oracle test (Tests/Oracles) python3 with the system tzdata, for the edge
# functions' routing test (Tests/EdgeFunctions) Node.js, for `make bench`'s PgQueuer line python3-venv, and
# for the alert rules' tests (deploy/prometheus) promtool, from Debian's prometheus package, and for the
# container image's test (scripts/image-rootfs.sh) debootstrap with Debian's archive keyring; then, from
# PyPI, the platforms' own checkers (scripts/checkers.txt). With --bench (`make bench`), also what only
# the bench needs: h2load, from nghttp2-client (section 9's providers' ceiling).
set -euo pipefail

missing=()
if [ "${1:-}" = "--bench" ]; then
  command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
fi
pkg-config --exists libpq 2>/dev/null || missing+=(libpq-dev)
pkg-config --exists libcurl 2>/dev/null && [ -e /usr/include/x86_64-linux-gnu/curl/curl.h -o -e /usr/include/curl/curl.h ] || missing+=(libcurl4-openssl-dev)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
# The transaction-pooling test (Tests/HeraldWorkerTests/PoolerTests) runs passes through it.
[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
# nginx-light has HTTP/2; its `return` answers without reading the request body (Tests/Support/EarlyAnsweringNginx).
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || missing+=(nginx-light)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# A Swift container image (.github/workflows/ci.yml runs in one) need not have make.
command -v make >/dev/null 2>&1 || missing+=(make)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# `make bench` runs PgQueuer from a throw-away virtualenv (python3 -m venv needs ensurepip).
command -v python3 >/dev/null 2>&1 && python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
[ -e /usr/share/zoneinfo/America/Chicago ] || missing+=(tzdata)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
# `promtool check rules` and `promtool test rules` on deploy/prometheus (Tests/HeraldWorkerTests/PromtoolTests).
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
[ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts the nginx service it installs (on port 80) where no policy-rc.d forbids it; the tests
  # run their own nginx on a loopback port, so stop the one just installed.
  if [[ " ${missing[*]} " == *" nginx-light "* ]] && [ -e /run/nginx.pid ]; then
    $SUDO nginx -s quit 2>/dev/null || true
  fi
fi

# The platforms' own checkers (hadolint, kubernetes-validate, actionlint: Tests/HeraldWorkerTests/
# CheckerTests), from PyPI, into a virtualenv of this checkout's own: .build/checkers. The list is
# scripts/checkers.txt; the virtualenv keeps a copy of the list it was made from, and is made again
# when the list changes.
checkers="$(cd "$(dirname "$0")/.." && pwd)/.build/checkers"
list="$(dirname "$0")/checkers.txt"
if ! cmp -s "$list" "$checkers/checkers.txt"; then
  echo "deps: installing the checkers of $list into $checkers" >&2
  rm -rf "$checkers"
  python3 -m venv "$checkers"
  "$checkers/bin/pip" install -q --disable-pip-version-check -r "$list"
  cp "$list" "$checkers/checkers.txt"
fi
