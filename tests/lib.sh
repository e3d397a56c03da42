# tests/lib.sh - helpers sourced by the integration scripts.
# Conventions: run from the repo root with BUILD set; exit 0 pass, 77 skip, else fail.
set -u
BUILD=${BUILD:-build}
WORKER=$BUILD/pacer-worker
PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
FASHION=/usr/share/datasets/fashion-mnist
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "skip: $*"; exit 77; }
need_dir() { [ -d "$1" ] || skip "$2 not found at $1"; }

# json FILE FILTER - one value from a JSON file (jq is installed by make deps).
json() { jq -r "$2" "$1"; }

# at_least NAME VALUE MIN - numeric comparison with a message either way.
at_least() {
    if awk -v v="$2" -v m="$3" 'BEGIN { exit !(v >= m) }'; then
        echo "ok: $1 = $2 (>= $3)"
    else
        fail "$1 = $2, want >= $3"
    fi
}

# expect_error STATUS PATTERN CMD... - CMD must exit with STATUS and print PATTERN.
expect_error() {
    want=$1 pat=$2
    shift 2
    "$@" >"$TMP/out" 2>&1
    got=$?
    [ "$got" -eq "$want" ] || { cat "$TMP/out"; fail "'$*' exited $got, want $want"; }
    grep -q -- "$pat" "$TMP/out" || { cat "$TMP/out"; fail "'$*' did not say '$pat'"; }
    echo "ok: exit $want, says: $(grep -m1 -- "$pat" "$TMP/out")"
}

# mpirun as the tests use it: more ranks than cores, as root, quiet about the container.
MPIRUN="mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"
