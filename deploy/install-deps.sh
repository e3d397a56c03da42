#!/bin/sh
# deploy/install-deps.sh - installs the Debian packages pacer needs, only those missing.
# Used by `make deps` and by deploy/Dockerfile. Runs apt-get as root directly, through
# sudo otherwise. Usage: install-deps.sh [group ...]; groups: build (default), test,
# bench, browser, deploy. Printing what it installs keeps CI logs honest.
set -eu

build="build-essential pkg-config libopenblas-dev libopenmpi-dev openmpi-bin libjansson-dev \
libhiredis-dev redis-server libmicrohttpd-dev zlib1g-dev libcmocka-dev dataset-fashion-mnist \
ca-certificates curl"
test="iproute2 procps psmisc jq"
bench="python3-torch wrk"
browser="chromium nodejs npm"
deploy="docker-compose"

groups=${*:-build}
want=""
for g in $groups; do
    eval "want=\"\$want \$$g\""
done

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "deps: all present ($groups)"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# Update the package lists only when they are missing or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
    $SUDO apt-get update -q
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
