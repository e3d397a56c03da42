#!/bin/sh
# deploy/install-deps.sh - installs the Debian packages pacer needs, only those missing.
# Used by `make deps` and by deploy/Dockerfile. Runs apt-get as root directly, through
# sudo otherwise. Usage: install-deps.sh [group ...]; groups: build (default), test,
# bench, browser, fuzz, deploy. Printing what it installs keeps CI logs honest. The test
# group also installs the API contract's tools from npm (npm_contract below).
set -eu

# build: compilers and libraries (libcurl for the pacer client), Redis, the default data
# set, node + npm for the dashboard's uPlot (installed from npm at build time), SimGrid
# (smpicc, smpirun) for the simulated cluster (make smpi, build/pacer-sim), libpng,
# libjpeg-turbo and libzip for users' own data sets (image folders, .npz), and protobuf-c
# and python3-onnx's onnx.proto for the ONNX importer (model/onnx_import.c, generated at
# build time).
build="build-essential pkg-config libopenblas-dev libopenmpi-dev openmpi-bin libjansson-dev \
libhiredis-dev redis-server libmicrohttpd-dev zlib1g-dev libcmocka-dev libcurl4-openssl-dev dataset-fashion-mnist \
libpng-dev libjpeg62-turbo-dev libzip-dev \
ca-certificates curl nodejs npm libsimgrid-dev protobuf-c-compiler libprotobuf-c-dev python3-onnx"
# test: what the integration tests drive (jq, namespaces, a headless browser, compose, a
# JSON Schema validator for the REST answers against docs/openapi.json, and a real Slurm for
# tests/integration/slurm.sh), readelf (binutils) for the CUDA-backend check, and
# clang-format for `make format-check` (.ci/run), PIL and NumPy for the tests that write image
# folders and .npz files (tests/integration/user_data.sh). The Slurm services stay down (their units
# need /etc/slurm/slurm.conf, which nothing writes); a munge service the package may start
# is not used: the test runs its own daemons with their own key (deploy/slurm). PyTorch
# (python3-torch) exports the networks the ONNX import is checked against at test time
# (tests/tools/onnx_export.py: test_onnx_import, onnx_train, onnx_zoo, model_upload) and
# backs the Python client's test; without it those skip, so a fresh machine would not run
# them. libonnx-testdata is ONNX's own conformance suite (its backend tests under
# /usr/share/libonnx-testdata/data), which tests/integration/onnx_conformance.sh runs
# through pacer-worker --onnx-case. python3-torchvision's model zoo is what
# tests/integration/onnx_torchvision.sh imports (MobileNet, MNASNet, RegNetY, EfficientNet).
# openssl makes the CA and certificates of tests/integration/tls.sh at run time.
test="openssl iproute2 procps psmisc jq chromium docker-compose python3-jsonschema slurmctld slurmd slurm-client munge binutils clang-format \
python3-pil python3-numpy python3-torch python3-torchvision libonnx-testdata"
bench="python3-torch wrk linux-perf libdnnl-dev"
browser="chromium nodejs npm"
fuzz="clang libclang-rt-14-dev"
deploy="docker-compose"

groups=${*:-build}
want=""
for g in $groups; do
    eval "want=\"\$want \$$g\""
done

# A package counts as present when dpkg has it, or, for node and npm, when the command
# exists (a nodesource nodejs bundles npm and conflicts with Debian's npm package).
present() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" && return 0
    case $1 in
        nodejs) command -v node >/dev/null 2>&1 ;;
        npm) command -v npm >/dev/null 2>&1 ;;
        *) return 1 ;;
    esac
}
# npm_contract - the test group's tools from npm that check docs/openapi.json
# (tests/integration/http_contract.sh): swagger-parser and Prism, at the versions pinned in
# tests/contract/package-lock.json, so that the test itself needs no network. npm ci runs
# again only when the lock file changed since the last install (npm keeps a copy of it in
# node_modules/.package-lock.json). Without node or npm the test skips, saying so.
npm_contract() {
    case " $groups " in *" test "*) ;; *) return 0 ;; esac
    dir=$(dirname "$0")/../tests/contract
    [ -f "$dir/package-lock.json" ] || return 0
    command -v npm >/dev/null 2>&1 || { echo "deps: npm missing: the API contract test will skip"; return 0; }
    if [ -d "$dir/node_modules/@stoplight/prism-cli" ] && [ -d "$dir/node_modules/@apidevtools/swagger-parser" ] &&
        [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
        return 0
    fi
    echo "deps: npm ci in tests/contract (swagger-parser, Prism)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
}

# npm_onnxrt - onnxruntime-node (CPU), the independent runtime that checks pacer's exported
# ONNX files (tests/integration/onnx_train.sh), pinned in tests/onnxrt/package-lock.json.
# --ignore-scripts: its install script would download GPU libraries (no network at test
# time, none needed); the CPU build is inside the package. Without it that part of the
# test is not run, saying so.
npm_onnxrt() {
    case " $groups " in *" test "*) ;; *) return 0 ;; esac
    dir=$(dirname "$0")/../tests/onnxrt
    [ -f "$dir/package-lock.json" ] || return 0
    command -v npm >/dev/null 2>&1 || { echo "deps: npm missing: the ONNX export's runtime check will not run"; return 0; }
    if [ -d "$dir/node_modules/onnxruntime-node" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
        return 0
    fi
    echo "deps: npm ci --ignore-scripts in tests/onnxrt (onnxruntime-node)"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
}

# npm_bpe - gpt-tokenizer, the oracle of pacer's GPT-2 BPE (tests/integration/bpe_oracle.sh),
# pinned in tests/bpe/package-lock.json; plain JavaScript, no install script to run.
npm_bpe() {
    case " $groups " in *" test "*) ;; *) return 0 ;; esac
    dir=$(dirname "$0")/../tests/bpe
    [ -f "$dir/package-lock.json" ] || return 0
    command -v npm >/dev/null 2>&1 || { echo "deps: npm missing: the BPE oracle test will be skipped"; return 0; }
    if [ -d "$dir/node_modules/gpt-tokenizer" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
        return 0
    fi
    echo "deps: npm ci --ignore-scripts in tests/bpe (gpt-tokenizer)"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
}

missing=""
for p in $want; do
    present "$p" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "deps: all present ($groups)"
    npm_contract
    npm_onnxrt
    npm_bpe
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
npm_contract
npm_onnxrt
npm_bpe
