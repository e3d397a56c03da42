#!/bin/sh
# sim/platforms/generate.sh PACER_PLATFORM DIR - writes the platform files kept in
# sim/platforms/ (make sim-platforms; tests/integration/sim_platforms.sh checks that the
# committed files are what this writes). Every file has a host "ps" for the parameter
# server; synchronous jobs leave it idle. Link figures are round numbers of the hardware
# class named, not measurements.
set -eu
gen=$1
out=$2
# 4 equal workers on 10 Gbit/s Ethernet.
"$gen" --ps --workers 4 --out "$out/homogeneous4.xml"
# The DBS-SGD paper's two heterogeneous profiles (relative speeds 1 : 1 : 1/2 : 1/4 and
# 1 : 1 : 1 : 1/8), same links.
"$gen" --ps --slowdown 1,1,2,4 --out "$out/hetero-1124.xml"
"$gen" --ps --slowdown 1,1,1,8 --out "$out/hetero-1118.xml"
# 4 equal workers on 1 Gbit/s links with 50 us latency: communication matters.
"$gen" --ps --workers 4 --bandwidth-gbps 1 --latency-us 50 --out "$out/slow-network4.xml"
# Cong and Bhardwaj's shape: 32 nodes of 4 GPUs (128 workers), 100 Gbit/s between nodes
# (EDR InfiniBand class), 400 Gbit/s between the GPUs of a node (NVLink class).
"$gen" --ps --workers 128 --gpus-per-node 4 --gflops 100 --bandwidth-gbps 100 --latency-us 2 \
    --intra-bandwidth-gbps 400 --intra-latency-us 1 --out "$out/nodes32x4.xml"
