# The coordinator's supervision tick with one RUNNING job of 64 ranks reporting (issue 5):
# time per tick (wall and CPU), Redis round trips per tick, CPU shares. A real
# redis-server on a unix socket in a temporary directory; the ranks are real worker Redis
# sinks (worker/redis_report.c) in a second process. bench/coord_tick.c says how.
# Environment: BUILD, RANKS (64), TICK_SECONDS (30), IDLE_SECONDS (5), TICK_S (0.2, the
# daemon's default --tick).
. bench/lib.sh
RANKS=${RANKS:-64}
TICK_SECONDS=${TICK_SECONDS:-30}
IDLE_SECONDS=${IDLE_SECONDS:-5}
TICK_S=${TICK_S:-0.2}
BIN=$BUILD/bench/coord_tick
[ -x "$BIN" ] || { echo "coord_tick: $BIN not built (make)" >&2; exit 1; }
[ -x "$WORKER" ] || { echo "coord_tick: $WORKER not built (make)" >&2; exit 1; }
redis-server --port 0 --unixsocket "$TMP/r.sock" --save '' --appendonly no --daemonize no >"$TMP/redis.log" 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null; wait $rpid 2>/dev/null; rm -rf "$TMP"' EXIT
i=0; until redis-cli -s "$TMP/r.sock" ping >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done
"$BIN" --redis "unix://$TMP/r.sock" --state "$TMP/state" --worker "$WORKER" --ranks "$RANKS" \
    --seconds "$TICK_SECONDS" --idle-seconds "$IDLE_SECONDS" --tick "$TICK_S" >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/err" >&2; exit 1; }
get() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/out"; }
row() {
    md "| $2 | $(get "$1_n") | $(get "$1_wall_p50") | $(get "$1_wall_p95") | $(get "$1_wall_max") | $(get "$1_cpu_p50") | $(get "$1_cpu_p95") | $(get "$1_rt") | $(get "$1_cmds") |"
}
md ""
md "### Coordinator tick with $RANKS ranks reporting (\`sh bench/coord_tick.sh\`)"
md ""
md "One RUNNING synchronous dynamic-batch job of $RANKS ranks, supervised as an adopted job; its ranks are"
md "$RANKS worker Redis sinks in a second process, each handed a step record every 100 ms (per round trip an"
md "XADD, the node and staleness HSETs with the heartbeat, the assignment HMGET). The coordinator's tick()"
md "is called every $TICK_S s for $(get seconds) s (idle: ${IDLE_SECONDS} s before the job is adopted, same Redis load). Times in ms."
md ""
md "| ticks | n | wall p50 | wall p95 | wall max | CPU p50 | CPU p95 | Redis round trips (mean) | commands (mean) |"
md "|---|---|---|---|---|---|---|---|---|"
row idle "idle (no job)"
row job "**job, all ticks**"
row job_plain "job, heartbeat check only"
row job_second "job, + lock/info or a planning round (1/s each)"
md ""
md "Coordinator CPU with the job: **$(get process_cpu_share)% of one core** ($(get tick_cpu_share)% inside tick());"
md "redis-server $(get redis_cpu_share)% and the $RANKS reporters $(get reporters_cpu_share)% (their traffic, mostly);"
md "$(get plans) new batch plans written (rank speeds rotate every 5 s)."
