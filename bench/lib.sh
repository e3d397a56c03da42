# bench/lib.sh - helpers for the benchmark scripts (sourced). Results are printed and
# also appended as Markdown to $OUT (build/bench/results.md) for docs/RESULTS.md and
# docs/PERFORMANCE.md.
set -u
BUILD=${BUILD:-build}
WORKER=$BUILD/pacer-worker
OUT=${OUT:-$BUILD/bench/results.md}
PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
MPIRUN="mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"
export OPENBLAS_NUM_THREADS=1
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
md() { printf '%s\n' "$*" | tee -a "$OUT"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
