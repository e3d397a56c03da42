# Generation speed, one thread: pacer-generate (the model's graph run by positions,
# model/decode.h) on a GPT of nanoGPT's shakespeare_char GPU shape (6 blocks, 6 heads, width
# 384, block 512, bytes: 10.7 M parameters; a checkpoint after one training step, the speed
# not depending on the weights) against PyTorch's own loop with a cache on the same module
# shape (bench/torch_generate.py), RUNS alternating runs each (3), medians: tokens per second
# over the 200 tokens after the first, and the time to the first token of a 256-token prompt
# (pacer's includes starting the process and reading the checkpoint). The same module
# exported by torch.onnx and imported (`"model": {"onnx": PATH}`) generates in the same
# rounds: its tokens/s against the built-in GPT's (the two run the same kind of graph), and
# its answers must say kv_cache (each position computed once).
. bench/lib.sh
RUNS=${RUNS:-3}
GEN=$BUILD/pacer-generate
LIC=/usr/share/common-licenses
mkdir -p "$TMP/text"
cat "$LIC/GPL-3" >"$TMP/text/train.txt"
head -c 8192 "$LIC/LGPL-2.1" >"$TMP/text/val.txt"
cat >"$TMP/spec.json" <<JSON
{"name": "g", "model": {"gpt": {"layers": 6, "heads": 6, "embd": 384, "block_size": 512}},
 "dataset": {"format": "text", "path": "$TMP/text", "train_subset": 8, "test_subset": 2},
 "batch_size": 2, "epochs": 1, "threads": 1, "device": "cpu", "log_every": 0,
 "optimizer": {"kind": "adamw", "lr": 0.001}, "checkpoint": {"every_steps": 1, "dir": "$TMP/ck"}}
JSON
OPENBLAS_NUM_THREADS=1 $WORKER --spec "$TMP/spec.json" --stop-after-steps 1 >"$TMP/train.log" 2>&1 ||
    { tail "$TMP/train.log"; echo "pacer-worker failed"; exit 1; }
/usr/bin/python3 bench/torch_generate.py --export "$TMP/gpt.onnx" 6 6 384 512 >"$TMP/export.log" 2>&1 ||
    { tail -3 "$TMP/export.log"; echo "torch could not export the GPT"; exit 1; }
jq --arg m "$TMP/gpt.onnx" --arg ck "$TMP/ick" '.name = "i" | .model = {onnx: $m} | .checkpoint.dir = $ck' \
    "$TMP/spec.json" >"$TMP/ispec.json"
OPENBLAS_NUM_THREADS=1 $WORKER --spec "$TMP/ispec.json" --stop-after-steps 1 >"$TMP/itrain.log" 2>&1 ||
    { tail "$TMP/itrain.log"; echo "pacer-worker failed on the imported GPT"; exit 1; }
head -c 256 "$LIC/GPL-2" >"$TMP/prompt.txt"
# the time of each line pacer-generate prints, from its start (SPEC and checkpoints CK)
timed() {
    /usr/bin/python3 - "$GEN" "$TMP" "$1" "$2" <<'PY'
import json, subprocess, sys, time
gen, tmp, spec, ck = sys.argv[1:5]
t0 = time.perf_counter()
p = subprocess.Popen([gen, "--spec", tmp + "/" + spec, "--checkpoint-dir", tmp + "/" + ck, "--max-tokens", "201",
                      "--temperature", "0"], stdin=open(tmp + "/prompt.txt", "rb"), stdout=subprocess.PIPE,
                     env={"OPENBLAS_NUM_THREADS": "1"})
times, last = [], b"{}"
for line in p.stdout:
    times.append(time.perf_counter() - t0)
    last = line
p.wait()
print(json.dumps({"first_token_s": times[0], "tokens_per_s": 200 / (times[200] - times[0]),
                  "kv_cache": json.loads(last).get("kv_cache")}))
PY
}
for i in $(seq "$RUNS"); do
    timed spec.json ck >"$TMP/p$i.json" || exit 1
    timed ispec.json ick >"$TMP/i$i.json" || exit 1
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_generate.py 6 6 384 512 256 200 >"$TMP/t$i.json" || exit 1
done
for i in $(seq "$RUNS"); do
    [ "$(jq .kv_cache "$TMP/i$i.json")" = true ] || { echo "the imported GPT recomputed its window"; exit 1; }
done
p=$(for i in $(seq "$RUNS"); do jq .tokens_per_s "$TMP/p$i.json"; done | median)
t=$(for i in $(seq "$RUNS"); do jq .tokens_per_s "$TMP/t$i.json"; done | median)
pf=$(for i in $(seq "$RUNS"); do jq .first_token_s "$TMP/p$i.json"; done | median)
tf=$(for i in $(seq "$RUNS"); do jq .first_token_s "$TMP/t$i.json"; done | median)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
md "Generation, GPT 6 x 384, block 512, one thread ($cpu; torch $(jq -r .torch "$TMP/t1.json")), median of $RUNS alternating runs:"
md "  tokens/s after the first: pacer $(printf '%.1f' "$p"), PyTorch with a cache $(printf '%.1f' "$t"): pacer/PyTorch $(ratio "$p" "$t")"
md "  first token of a 256-token prompt: pacer $(printf '%.3f' "$pf") s (the process's start and checkpoint included), PyTorch $(printf '%.3f' "$tf") s"
im=$(for i in $(seq "$RUNS"); do jq .tokens_per_s "$TMP/i$i.json"; done | median)
md "  the same module imported from torch.onnx: pacer $(printf '%.1f' "$im") tokens/s, $(ratio "$im" "$p") the built-in GPT's, $(ratio "$im" "$t") PyTorch's"
imf=$(for i in $(seq "$RUNS"); do jq .first_token_s "$TMP/i$i.json"; done | median)
md "  its first token: $(printf '%.3f' "$imf") s (importing the ONNX file included)"
