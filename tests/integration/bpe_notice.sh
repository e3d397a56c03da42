# A notice while a long text is BPE-encoded at a job's start: pacer-worker on a 32 MiB
# train.txt of one letter (one run of one class, merged with itself by the only merge) gets
# SIGTERM a second into the encoding; the encoder asks for notices every MiB of text, so the
# worker gives up the encoding, says where it stopped and which signal it heard, and exits
# 75 (stopped on notice, to be resumed), not 2 (bad input) and not after the whole encoding
# and the training (the 20 s wait is a bound on hearing the signal, not a speed figure:
# the whole encoding takes about a minute of CPU).
. tests/lib.sh
D=$TMP/text
mkdir -p "$D"
python3 tests/tools/one_merge_bpe.py "$D" a a
python3 - "$D" <<'PY'
import sys
d = sys.argv[1]
open(d + '/train.txt', 'w').write('a' * (32 << 20))
open(d + '/val.txt', 'w').write('a a a a a a a a a a a a a a a a a a a a\n')
PY
jq -n --arg d "$D" '{name: "n", model: {gpt: {layers: 1, heads: 1, embd: 16, block_size: 8}},
      dataset: {format: "text", path: $d, tokenizer: {kind: "bpe", vocab: "\($d)/vocab.json", merges: "\($d)/merges.txt"},
                cache_dir: "\($d)/cache"},
      batch_size: 8, epochs: 1, seed: 1, device: "cpu", log_every: 0}' >"$TMP/job.json"
$WORKER --spec "$TMP/job.json" >"$TMP/w.log" 2>&1 &
pid=$!
sleep 1
kill -TERM "$pid" 2>/dev/null || { cat "$TMP/w.log"; fail "the worker ended before the notice"; }
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    fail "pacer-worker still encoding 20 s after SIGTERM"
fi
wait "$pid"
rc=$?
[ "$rc" = 75 ] || { cat "$TMP/w.log"; fail "pacer-worker exited $rc after a notice during the encoding, want 75"; }
grep -q "train.txt: stopped after [0-9]* of 33554432 bytes: signal 15 heard" "$TMP/w.log" ||
    { cat "$TMP/w.log"; fail "the log does not say where the encoding stopped and why"; }
echo "ok: SIGTERM during a 32 MiB BPE encoding: stopped within a MiB, exit 75 ($(grep -o 'stopped after [0-9]*' "$TMP/w.log"))"
