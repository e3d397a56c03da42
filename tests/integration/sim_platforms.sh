# Platforms of the simulated cluster: the files in sim/platforms/ are what
# sim/platforms/generate.sh writes; ranks land on the hosts they should (parameter server
# on "ps", workers in host order, a k-core node taking k consecutive workers, a hostfile's
# "name:N"); and pacer-platform --redis turns the node profiles the coordinator keeps in
# Redis (a real redis-server on a unix socket here) into a platform on which each node
# trains at its profiled speed, a bf16 job at its bf16 one (device cpu-bf16). A generated
# platform's hosts compute a bf16 job at simulate.bf16_gflops. Bad profiles and platforms
# get a message naming them.
. tests/integration/sim_lib.inc
[ -x "$PLATFORM_GEN" ] || fail "$PLATFORM_GEN not built (make all)"

mkdir -p "$TMP/gen"
sh sim/platforms/generate.sh "$PLATFORM_GEN" "$TMP/gen" || fail "generate.sh failed"
for f in sim/platforms/*.xml; do
    cmp "$f" "$TMP/gen/$(basename "$f")" || fail "$f differs from what generate.sh writes (make sim-platforms)"
done
[ "$(ls "$TMP/gen" | wc -l)" = "$(ls sim/platforms/*.xml | wc -l)" ] || fail "generate.sh writes files that are not committed"
echo "ok: sim/platforms/*.xml are up to date ($(ls sim/platforms/*.xml | wc -l) files)"
expect_error 2 "simulate.latency_us: must be between 0 and 1000000" "$PLATFORM_GEN" --workers 2 --latency-us -1
expect_error 2 "give --slowdown or --workers" "$PLATFORM_GEN" --ps
# --cost: the figures a deterministic simulation charges (docs/ARCHITECTURE.md: LeNet-5's
# forward pass is 841,174 FLOPs; training 3x; an optimizer step per parameter by its rule,
# sim/cost.h: 7 for the default SGD with momentum, 15 for AdamW).
[ "$("$PLATFORM_GEN" --cost lenet5 | jq -c '[.forward_flops, .train_flops, .update_flops, .params]')" = "[841174,2523522,431942,61706]" ] ||
    fail "pacer-platform --cost lenet5: $("$PLATFORM_GEN" --cost lenet5)"
[ "$("$PLATFORM_GEN" --cost lenet5 | jq -c '.update_flops_by_optimizer | [.sgd, .sgd_momentum, .sgd_nesterov, .adamw]')" = "[308530,431942,555354,925590]" ] ||
    fail "pacer-platform --cost lenet5 by optimizer: $("$PLATFORM_GEN" --cost lenet5)"
expect_error 2 "unknown model 'nope'" "$PLATFORM_GEN" --cost nope
echo "ok: pacer-platform --cost prints the cost model's figures"

need_sim
need_fashion
# hosts NAME - the hostfile pacer-sim writes for $TMP/NAME.json, on one line.
hosts() {
    "$SIM" --spec "$TMP/$1.json" --summary "$TMP/$1.out" --dry-run --keep "$TMP/$1.d" >"$TMP/$1.log" 2>&1 ||
        { cat "$TMP/$1.log"; fail "pacer-sim --dry-run $1"; }
    tr '\n' ' ' <"$TMP/$1.d/hostfile"
}
sim_spec "$TMP/m1.json" '{"algorithm": {"name": "asgd"}, "simulate": {"platform": "sim/platforms/hetero-1124.xml"}}'
[ "$(hosts m1)" = "ps w0 w1 w2 w3 " ] || fail "asgd on hetero-1124.xml: hosts $(hosts m1)"
sim_spec "$TMP/m2.json" '{"simulate": {"platform": "sim/platforms/hetero-1124.xml"}}'
[ "$(hosts m2)" = "w0 w1 w2 w3 " ] || fail "ssgd on hetero-1124.xml: hosts $(hosts m2)"
sim_spec "$TMP/m3.json" '{"workers": 6, "simulate": {"platform": "sim/platforms/nodes32x4.xml"}}'
[ "$(hosts m3)" = "n0 n0 n0 n0 n1 n1 " ] || fail "6 workers on nodes32x4.xml: hosts $(hosts m3)"
printf 'w3:2\n# the fast ones\nw0\n' >"$TMP/hf"
sim_spec "$TMP/m4.json" "{\"algorithm\": {\"name\": \"asgd\"}, \"simulate\": {\"platform\": \"sim/platforms/hetero-1124.xml\", \"hostfile\": \"$TMP/hf\"}}"
[ "$(hosts m4)" = "ps w3 w3 w0 w3 " ] || fail "hostfile w3:2, w0: hosts $(hosts m4)"
sim_spec "$TMP/m5.json" '{"simulate": {"gpus_per_node": 2}}'
[ "$(hosts m5)" = "n0 n0 n1 n1 " ] || fail "generated 2-GPU nodes: hosts $(hosts m5)"
echo "ok: ranks on their hosts (ps first, host order, k-core nodes take k workers, hostfile name:N)"
# A bf16 job's generated hosts compute at simulate.bf16_gflops (its products on bf16
# units), at gflops without it: the deterministic compute time of the same steps is
# gflops / bf16_gflops = 1/4 of it, to rounding.
sim_spec "$TMP/b10.json" '{"workers": 2, "epochs": 1, "precision": "bf16", "simulate": {"gflops": 10}}'
sim_spec "$TMP/b40.json" '{"workers": 2, "epochs": 1, "precision": "bf16", "simulate": {"gflops": 10, "bf16_gflops": 40}}'
sim_run b10
sim_run b40
for r in 0 1; do
    c10=$(json "$TMP/b10.out" ".per_rank[$r].compute_s")
    c40=$(json "$TMP/b40.out" ".per_rank[$r].compute_s")
    within "rank $r: bf16 compute_s at bf16_gflops 40 x 4 (at gflops 10: $c10)" \
        "$(awk -v a="$c40" 'BEGIN { print 4 * a }')" "$c10" "$(awk -v a="$c10" 'BEGIN { print a / 1000 }')"
done
printf '<platform version="4.1"><zone id="z" routing="Full"><cluster id="c" prefix="c" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="1us"/></zone></platform>\n' >"$TMP/cluster.xml"
sim_spec "$TMP/bad1.json" "{\"simulate\": {\"platform\": \"$TMP/cluster.xml\"}}"
expect_error 2 "no <host> elements besides \"ps\" (for <cluster> platforms give simulate.hostfile)" \
    "$SIM" --spec "$TMP/bad1.json" --summary "$TMP/x"
printf 'w0\nbad;name\n' >"$TMP/badhf"
sim_spec "$TMP/bad2.json" "{\"simulate\": {\"platform\": \"sim/platforms/hetero-1124.xml\", \"hostfile\": \"$TMP/badhf\"}}"
expect_error 2 "badhf:2: host name 'bad;name' must be" "$SIM" --spec "$TMP/bad2.json" --summary "$TMP/x"

# ---- the cluster you have: node profiles from Redis ----
command -v redis-server >/dev/null || skip "redis-server not installed (make deps)"
SOCK=$TMP/redis.sock
redis-server --port 0 --unixsocket "$SOCK" --save "" --appendonly no --daemonize no \
    --logfile "$TMP/redis.log" &
REDIS_PID=$!
trap 'kill -9 $REDIS_PID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
until redis-cli -s "$SOCK" PING >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "redis-server did not start"; sleep 0.1
done
R="redis-cli -s $SOCK"
profile() { # HOST DEVICE MODEL SAMPLES_PER_S - as the coordinator writes them (docs/REDIS.md)
    k=pacer:profile:$1:$2:$3
    $R HSET "$k" host "$1" device "$2" model "$3" samples_per_s "$4" updated 1700000000.000 jobs 3 >/dev/null
    $R SADD pacer:profiles "$k" >/dev/null
}
profile fast cpu lenet5 4000
profile slow cpu lenet5 1000
profile fast cuda lenet5 20000
profile fast cpu mlp 9000
URL=unix://$SOCK
"$PLATFORM_GEN" --redis "$URL" --model lenet5 --device cpu --ps --out "$TMP/prof.xml" || fail "pacer-platform --redis"
grep -o '<host id="[^"]*"' "$TMP/prof.xml" | tr '\n' ' ' | grep -q '<host id="ps" <host id="fast" <host id="slow"' ||
    { cat "$TMP/prof.xml"; fail "profile platform: want hosts ps, fast, slow"; }
"$PLATFORM_GEN" --redis "$URL" --model lenet5 --out "$TMP/all.xml" || fail "pacer-platform --redis (all devices)"
grep -o '<host id="[^"]*"' "$TMP/all.xml" | tr '\n' ' ' | grep -q '<host id="fast-cpu" <host id="fast-cuda" <host id="slow"' ||
    { cat "$TMP/all.xml"; fail "a host profiled on two devices should become fast-cpu and fast-cuda"; }
echo "ok: platforms from Redis profiles (model and device filters, one host per (host, device))"

# A deterministic run on it trains each node at its profiled speed.
sim_spec "$TMP/prof.json" "{\"workers\": 2, \"algorithm\": {\"name\": \"asgd\"}, \"optimizer\": {\"lr\": 0.01},
    \"simulate\": {\"platform\": \"$TMP/prof.xml\"}}"
sim_run prof
within "worker on 'fast' samples/s (profile 4000)" "$(json "$TMP/prof.out" .per_rank[1].samples_per_s)" 4000 4
within "worker on 'slow' samples/s (profile 1000)" "$(json "$TMP/prof.out" .per_rank[2].samples_per_s)" 1000 1

# precision bf16 computes at its own rate. A CPU's bf16 profile (device cpu-bf16: what a
# bf16 job's ranks measured there) is the node's speed in a bf16 platform and is left out
# of an fp32 one; a bf16 job on it trains at that profile's speed.
profile fast cpu-bf16 lenet5 12000
"$PLATFORM_GEN" --redis "$URL" --model lenet5 --out "$TMP/all32.xml" || fail "pacer-platform --redis (fp32)"
[ "$(grep -o '<host id="[^"]*"' "$TMP/all32.xml" | tr '\n' ' ')" = '<host id="fast-cpu" <host id="fast-cuda" <host id="slow" ' ] ||
    { cat "$TMP/all32.xml"; fail "an fp32 platform takes the fp32 profiles only (hosts fast-cpu, fast-cuda, slow)"; }
"$PLATFORM_GEN" --redis "$URL" --model lenet5 --device cpu --precision bf16 --out "$TMP/bf16.xml" ||
    fail "pacer-platform --redis --precision bf16"
[ "$(grep -o '<host id="[^"]*"' "$TMP/bf16.xml" | tr '\n' ' ')" = '<host id="fast" ' ] ||
    { cat "$TMP/bf16.xml"; fail "a bf16 platform of the CPU profiles: want host fast (slow has no bf16 profile)"; }
sim_spec "$TMP/pb.json" "{\"workers\": 1, \"precision\": \"bf16\", \"simulate\": {\"platform\": \"$TMP/bf16.xml\"}}"
sim_run pb
within "bf16 worker on 'fast' samples/s (its bf16 profile 12000)" "$(json "$TMP/pb.out" .per_rank[0].samples_per_s)" 12000 12
expect_error 2 "--device: 'cpu-bf16' is not cpu or cuda (a bf16 job's CPU profiles: --precision bf16)" \
    "$PLATFORM_GEN" --redis "$URL" --model lenet5 --device cpu-bf16
expect_error 2 "has no profile for model mlp on device cpu at precision bf16" \
    "$PLATFORM_GEN" --redis "$URL" --model mlp --device cpu --precision bf16
expect_error 2 "precision: " "$PLATFORM_GEN" --redis "$URL" --model lenet5 --precision fp16
echo "ok: bf16 platforms from the nodes' bf16 profiles; fp32 ones leave them out"

expect_error 2 "has no profile for model resnet20" "$PLATFORM_GEN" --redis "$URL" --model resnet20
expect_error 1 "$TMP/none.sock" "$PLATFORM_GEN" --redis "unix://$TMP/none.sock" --model lenet5
expect_error 2 "--redis: " "$PLATFORM_GEN" --redis "http://x" --model lenet5
profile 'bad host' cpu lenet5 100
expect_error 2 "pacer:profile:bad host:cpu:lenet5: not a usable profile" "$PLATFORM_GEN" --redis "$URL" --model lenet5
$R SREM pacer:profiles "pacer:profile:bad host:cpu:lenet5" >/dev/null
profile odd cpu lenet5 fast
expect_error 2 "pacer:profile:odd:cpu:lenet5: not a usable profile" "$PLATFORM_GEN" --redis "$URL" --model lenet5
profile odd cpu lenet5 1e12
expect_error 2 "pacer:profile:odd:cpu:lenet5: not a usable profile" "$PLATFORM_GEN" --redis "$URL" --model lenet5
