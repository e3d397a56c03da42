# Training speed with and without --redis reporting (issue 5; target: under 2% overhead).
# A real redis-server on a unix socket; LeNet-5, one process, one epoch of 30720 samples
# per run. What is timed is the whole training loop, the step's metrics record included
# (train_s: every step from its first instruction to after its record was handed to the
# reporter), in PAIRS back-to-back pairs (standalone, then --redis, order alternating so
# drift favours neither). The overhead is the mean of the pairs' relative differences of
# train_s, with a 95% confidence interval from Student's t over the pairs: a result
# whose interval contains 0 says the overhead is below what this machine can resolve.
. bench/lib.sh
PAIRS=${PAIRS:-10}
redis-server --port 0 --unixsocket "$TMP/r.sock" --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null; rm -rf "$TMP"' EXIT
i=0; until redis-cli -s "$TMP/r.sock" ping >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done
cat > "$TMP/spec.json" <<JSON
{"name": "ovh", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 30720, "test_subset": 500},
 "epochs": 1, "batch_size": 64, "log_every": 0}
JSON
plain() { $WORKER --spec "$TMP/spec.json" --summary "$TMP/a$1.json" >/dev/null 2>&1 || exit 1; }
redis() { $WORKER --spec "$TMP/spec.json" --summary "$TMP/b$1.json" --redis "unix://$TMP/r.sock" --job "bench$1" >/dev/null 2>&1 || exit 1; }
for i in $(seq "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then plain "$i"; redis "$i"; else redis "$i"; plain "$i"; fi
done
for i in $(seq "$PAIRS"); do
    echo "$(jq .train_s "$TMP/a$i.json") $(jq .train_s "$TMP/b$i.json")"
done >"$TMP/pairs"
# t quantiles (two-sided 95%) for 1..30 degrees of freedom; 2.0 beyond.
stats=$(awk 'BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", t, " ") }
    { d[NR] = 100 * ($2 - $1) / $1; a += $1; b += $2; s += d[NR] }
    END { n = NR; m = s / n; for (i = 1; i <= n; i++) v += (d[i] - m) ^ 2; sd = n > 1 ? sqrt(v / (n - 1)) : 0
          q = n - 1 <= 30 ? t[n - 1] : 2.0; h = n > 1 ? q * sd / sqrt(n) : 0
          printf "%.2f %.2f %.3f %.3f %d", m, h, a / n, b / n, n }' "$TMP/pairs")
set -- $stats
n=$(redis-cli -s "$TMP/r.sock" eval "return #redis.call('keys', 'pacer:job:bench*:metrics')" 0)
md ""
md "### Metrics to Redis (\`PAIRS=$PAIRS sh bench/redis_overhead.sh\`)"
md ""
md "LeNet-5, one process, one epoch of 30,720 samples per run; $5 back-to-back pairs, every step's record sent"
md "($n metrics streams written). Training loop time, record hand-off included: $(printf %.3f "$3") s standalone,"
md "$(printf %.3f "$4") s with --redis (means). Overhead **$1% +- $2%** (mean of the pairs' differences, 95% CI; target < 2%)."
