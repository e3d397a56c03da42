#!/bin/sh
# bench/run.sh - every benchmark, one after the other (make bench). The Markdown they
# print is also collected in build/bench/results.md; docs/RESULTS.md and
# docs/PERFORMANCE.md quote it with the commands. Times on a shared 2-core machine are
# noisy: each benchmark compares against a baseline measured in the same run.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
export OUT=${OUT:-$BUILD/bench/results.md}
mkdir -p "$(dirname "$OUT")"
echo "# pacer benchmarks, $(date -u +%Y-%m-%d), $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo)" > "$OUT"
status=0
for b in lenet_vs_pytorch resnet_vs_pytorch threads_scaling onnx_import resnet18_onnx zoo_vs_torch transformer_vs_torch bf16_speed bf16_image_speed one_worker user_data mpi_sync hpsgd_overlap async_compare redis_overhead trace_overhead coord_tick launch_latency elastic_resize cifar_quick sim_scale tcp_eager; do
    [ -f bench/$b.sh ] || continue
    echo "== $b"
    sh bench/$b.sh || { echo "bench $b failed"; status=1; }
done
for b in bench/http_*.sh; do [ -f "$b" ] && { echo "== $b"; sh "$b" || status=1; }; done
echo "results: $OUT"
exit $status
