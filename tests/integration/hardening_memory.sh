# Issue 13, memory safety: the real pacer-worker (alone and under mpirun) and the real
# coordinator against input built to overflow something: a test set whose images do
# not fit the model, labels out of range, checkpoints with a valid CRC and one hostile
# header field each, a checkpoint of another spec or an older format, spec numbers far
# out of range, and stream ids above 2^64 - 1. Every case must end in a clear refusal
# (the worker: exit 2 and one line naming the file or field; the API: 400 naming the
# field or header), never a crash; and the coordinator keeps serving.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
PATCH=$BUILD/tools/ckpt_patch
[ -x "$PATCH" ] || fail "$PATCH not built (make)"

# be32 N - four big-endian bytes, for IDX headers.
be32() { printf "\\$(printf %03o $(($1 >> 24 & 255)))\\$(printf %03o $(($1 >> 16 & 255)))\\$(printf %03o $(($1 >> 8 & 255)))\\$(printf %03o $(($1 & 255)))"; }
# idx_head DIR PREFIX N - the first N Fashion-MNIST training images and labels as an IDX pair.
idx_head() {
    { printf '\000\000\010\003'; be32 "$3"; be32 28; be32 28
      gzip -dc "$FASHION/train-images-idx3-ubyte.gz" | tail -c +17 | head -c $(($3 * 784)); } >"$1/$2-images-idx3-ubyte"
    { printf '\000\000\010\001'; be32 "$3"
      gzip -dc "$FASHION/train-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$3"; } >"$1/$2-labels-idx1-ubyte"
}
# wspec FILE DATADIR [EXTRA] - a small LeNet-5 job on DATADIR, checkpoints into $TMP/ck.
wspec() {
    cat >"$1" <<JSON
{"name": "ck", "model": "lenet5", "dataset": {"name": "fashion-mnist", "path": "$2"},
 "batch_size": 64, "epochs": 2, "seed": 7, "log_every": 0, "device": "cpu",
 "checkpoint": {"every_steps": 4, "dir": "$TMP/ck"}${3:-}}
JSON
}

# ---- data sets that do not fit the model ------------------------------------------------
GOOD=$TMP/good
mkdir -p "$GOOD"
idx_head "$GOOD" train 512
idx_head "$GOOD" t10k 100

BAD=$TMP/bad40
mkdir -p "$BAD"
idx_head "$BAD" train 512
# a test set of 10 images of 40x40: before issue 13 evaluation overflowed the batch buffer
{ printf '\000\000\010\003'; be32 10; be32 40; be32 40; head -c 16000 /dev/zero; } >"$BAD/t10k-images-idx3-ubyte"
{ printf '\000\000\010\001'; be32 10; head -c 10 /dev/zero; } >"$BAD/t10k-labels-idx1-ubyte"
wspec "$TMP/bad40.json" "$BAD"
expect_error 2 "bad40/t10k-images-idx3-ubyte: images are 1x40x40, model lenet5 takes 1x28x28" \
    $WORKER --spec "$TMP/bad40.json"
# the same with two ranks: every rank refuses, none is left waiting in a collective
wspec "$TMP/bad40-ssgd.json" "$BAD" ', "workers": 2, "algorithm": {"name": "ssgd"}'
expect_error 2 "t10k-images-idx3-ubyte: images are 1x40x40" $MPIRUN -np 2 $WORKER --spec "$TMP/bad40-ssgd.json"

LAB=$TMP/badlabel
mkdir -p "$LAB"
idx_head "$LAB" train 512
cp "$GOOD/t10k-images-idx3-ubyte" "$LAB/"
{ printf '\000\000\010\001'; be32 100; head -c 50 /dev/zero; printf '\014'; head -c 49 /dev/zero; } >"$LAB/t10k-labels-idx1-ubyte"
wspec "$TMP/badlabel.json" "$LAB"
expect_error 2 "badlabel/t10k-labels-idx1-ubyte: label 12 at index 50 out of range" $WORKER --spec "$TMP/badlabel.json"

# ---- checkpoints: a valid CRC, one hostile field each ------------------------------------
wspec "$TMP/ck.json" "$GOOD"
$WORKER --spec "$TMP/ck.json" --stop-after-steps 4 >"$TMP/ck.log" 2>&1 || { cat "$TMP/ck.log"; fail "the checkpointing run failed"; }
CK=$TMP/ck/ck.ckpt
[ -s "$CK" ] || fail "no checkpoint at $CK"
# forge FIELD VALUE PATTERN - the checkpoint with FIELD = VALUE (CRC fixed) is refused so.
forge() {
    cp "$CK" "$TMP/forged.ckpt"
    $PATCH "$TMP/forged.ckpt" "$1" "$2" || fail "ckpt_patch $1 $2"
    expect_error 2 "forged.ckpt: .*$3" $WORKER --spec "$TMP/ck.json" --resume-from "$TMP/forged.ckpt"
}
# 512 samples / global batch 64 = 8 steps per epoch; one worker; the buffers hold 64
forge "batch_of[0]" 100000 "checkpoint field batch_of\[0\] = 100000 is outside \[1, 64\]"
forge "batch_of[0]" 0 "batch_of\[0\] = 0 is outside"
forge "batch_of[1]" 64 "batch_of\[1\] = 64 past nworkers (1), want 0"
forge nworkers 2 "checkpoint field nworkers = 2 is outside \[1, 1\]"
forge nworkers 100000 "invalid counters"
forge epoch 99 "checkpoint field epoch = 99 is outside \[0, 2\]"
forge epoch -1 "invalid counters"
forge step_in_epoch 9 "checkpoint field step_in_epoch = 9 is outside \[0, 8\]"
forge cursor 70000 "checkpoint field cursor = 70000 is outside \[256, 256\]"
forge global_step 1000000000 "checkpoint field global_step = 1000000000 is outside"
forge epoch_loss_samples 9223372036854775807 "epoch_loss_samples = 9223372036854775807 is outside"
forge ps_version 5 "ps_version = 5 is outside \[0, 4\]"
forge seed 8 "checkpoint was written with seed 8, spec has 7"
forge spec_hash 1 "checkpoint was written for another job spec"
forge layout_hash 1 "parameter layout"
forge nparams 5 "truncated or oversized checkpoint"
forge nparams 9223372036854775807 "truncated or oversized checkpoint"
forge version 1 "checkpoint format version 1 is from an older pacer-worker"
forge version 2 "checkpoint format version 2 is from an older pacer-worker, which kept model names in 32 bytes"
forge version 3 "checkpoint field header_bytes = [0-9]*, version 3 has [0-9]*"
forge version 5 "checkpoint field header_bytes = [0-9]*, version 5 has [0-9]*"
forge version 6 "checkpoint field header_bytes = [0-9]*, version 6 has [0-9]*"
forge version 9 "unsupported checkpoint version 9 (this build reads 3 to 8)"
forge header_bytes 12 "checkpoint field header_bytes = 12, version 8 has"
forge compress_ranks 300 "compress_ranks = 300 are not a PowerSGD state"
# another spec (a different learning rate) is refused; one that only moves files resumes
wspec "$TMP/other.json" "$GOOD" ', "optimizer": {"lr": 0.05}'
expect_error 2 "ck.ckpt: checkpoint was written for another job spec" $WORKER --spec "$TMP/other.json" --resume-from "$CK"
wspec "$TMP/moved.json" "$GOOD" ', "threads": 2'
$WORKER --spec "$TMP/moved.json" --resume-from "$CK" >"$TMP/moved.log" 2>&1 || { cat "$TMP/moved.log"; fail "resume with only threads changed failed"; }
grep -q "resumed from .* at step 4" "$TMP/moved.log" || { cat "$TMP/moved.log"; fail "did not resume at step 4"; }
echo "ok: the unforged checkpoint resumes, with a spec that changes only threads"
# under mpirun every rank reads the checkpoint and all of them refuse it
wspec "$TMP/ck2.json" "$GOOD" ', "workers": 2, "algorithm": {"name": "ssgd"}'
$MPIRUN -np 2 $WORKER --spec "$TMP/ck2.json" --stop-after-steps 4 >"$TMP/ck2.log" 2>&1 || { cat "$TMP/ck2.log"; fail "the 2-rank checkpointing run failed"; }
cp "$CK" "$TMP/forged2.ckpt"   # the 2-rank job has the same name: its checkpoint replaced $CK
$PATCH "$TMP/forged2.ckpt" "batch_of[1]" 100000
expect_error 2 "forged2.ckpt: .*batch_of\[1\] = 100000 is outside \[1, 64\]" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/ck2.json" --resume-from "$TMP/forged2.ckpt"

# ---- spec numbers out of range ----------------------------------------------------------
# bad FIELD-JSON PATTERN - a spec with that fragment is refused with the field's bound.
n=0
bad() {
    n=$((n + 1))
    echo "{\"model\": \"lenet5\", \"dataset\": {\"path\": \"$GOOD\"}, $1}" >"$TMP/range$n.json"
    expect_error 2 "$2" $WORKER --spec "$TMP/range$n.json"
    expect_error 2 "$2" "$COORD" --state-dir "$TMP/cli" submit "$TMP/range$n.json"
}
bad '"emulate": {"slowdown": [1e300]}' "emulate.slowdown\[0\]: must be between 1 and 1000"
bad '"workers": 2, "algorithm": {"name": "ssgd"}, "emulate": {"slowdown": [1, 1001]}' "emulate.slowdown\[1\]: must be between 1 and 1000"
bad '"emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 1e300}]}' "emulate.schedule\[0\].slowdown: must be between 1 and 1000"
bad '"emulate": {"schedule": [{"step": 9223372036854775807, "rank": 0, "slowdown": 2}]}' "emulate.schedule\[0\].step: must be between 0 and 1000000000000"
bad '"optimizer": {"lr": 1e300}' "optimizer.lr: must be in (0, 1000\]"
bad '"optimizer": {"lr_schedule": {"warmup_epochs": 1e300}}' "optimizer.lr_schedule.warmup_epochs: must be between 0 and 100000"
bad '"optimizer": {"lr_schedule": {"kind": "step", "step_epochs": 1e18}}' "optimizer.lr_schedule.step_epochs: must be in (0, 100000\]"
bad '"optimizer": {"clip_norm": 1e39}' "optimizer.clip_norm: must be between 0 and 1000000"
bad '"optimizer": {"weight_decay": 3.5e38}' "optimizer.weight_decay: must be between 0 and 1"
bad '"algorithm": {"lambda0": 1e300}' "algorithm.lambda0: must be between 0 and 1000"
bad '"checkpoint": {"every_steps": 9223372036854775807}' "checkpoint.every_steps: must be between 0 and 1000000000000"
bad '"log_every": 2147483648' "log_every: must be between 0 and 1000000000"

# the coordinator's numeric options are bounded too: (int)1e300 would be undefined
expect_error 2 "max-restarts: '1e300' is not a number between 0 and 1000000000" \
    "$COORD" --state-dir "$TMP/cli" --max-restarts 1e300 status j-1
expect_error 2 "sse-max: 'nan' is not a number" "$COORD" --state-dir "$TMP/cli" --sse-max nan status j-1
# ... and one outside its own range is refused by name, not replaced by the default
expect_error 2 "preflight-steps: '5000' is not between 1 and 1000" \
    "$COORD" --state-dir "$TMP/cli" --preflight-steps 5000 status j-1
expect_error 2 "max-model-bytes: '0' is not between 1 and 1000000000" \
    "$COORD" --state-dir "$TMP/cli" --max-model-bytes 0 status j-1

# ---- the coordinator: the same specs over HTTP, and stream ids past 2^64 - 1 ---------------
start_coord --listen 127.0.0.1:0
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
[ -n "$BASE" ] || { cat "$TMP/coord.log"; fail "no REST API line in the coordinator log"; }
# status METHOD PATH [CURL ARGS] - the HTTP status; the body in $TMP/body
status() { m=$1 p=$2; shift 2; curl -s -m 5 -o "$TMP/body" -w '%{http_code}' -X "$m" "$@" "$BASE$p"; }
# api_bad FIELD-JSON FIELD - POST /api/v1/jobs is a 400 problem naming the field
api_bad() {
    got=$(status POST /api/v1/jobs -H "Content-Type: application/json" --data-binary "{\"model\": \"lenet5\", $1}")
    [ "$got" = 400 ] || { cat "$TMP/body"; fail "POST with $1: HTTP $got, want 400"; }
    [ "$(jq -r .field "$TMP/body")" = "$2" ] || { cat "$TMP/body"; fail "POST with $1: field is not $2"; }
    echo "ok: POST with $1: 400, field $2"
}
api_bad '"emulate": {"slowdown": [1e300]}' "emulate.slowdown[0]"
api_bad '"optimizer": {"lr_schedule": {"warmup_epochs": 1e300}}' "optimizer.lr_schedule.warmup_epochs"
api_bad '"algorithm": {"params": {"kappa": 1e308}}' "algorithm.params.kappa"

# Last-Event-ID and ?since=: each part at most 2^64 - 1. Before issue 13 the first opened a
# stream whose every read Redis refused, retried forever.
for id in "99999999999999999999-0" "18446744073709551616" "1-18446744073709551616" "1-0,1-99999999999999999999"; do
    got=$(status GET /api/v1/events -H "Last-Event-ID: $id")
    [ "$got" = 400 ] || { cat "$TMP/body"; fail "Last-Event-ID $id: HTTP $got, want 400"; }
    [ "$(jq -r .parameter "$TMP/body")" = "Last-Event-ID" ] || { cat "$TMP/body"; fail "Last-Event-ID $id: no parameter"; }
    echo "ok: Last-Event-ID $id: 400"
done
got=$(status GET "/api/v1/jobs/j-1/metrics?since=18446744073709551616-0")
[ "$got" = 400 ] || { cat "$TMP/body"; fail "since=2^64: HTTP $got, want 400"; }
echo "ok: ?since= with a part of 2^64: 400"
# the largest id is valid: the stream opens (and is cut by curl's timeout)
got=$(curl -s -m 2 -o /dev/null -w '%{http_code}' -H "Last-Event-ID: 18446744073709551615-18446744073709551615" "$BASE/api/v1/events")
[ "$got" = 200 ] || fail "Last-Event-ID 2^64 - 1: HTTP $got, want 200"
echo "ok: Last-Event-ID 18446744073709551615-18446744073709551615 opens the stream"
[ "$(status GET /healthz)" = 200 ] || fail "the coordinator stopped answering"
kill -0 "$COORD_PID" || fail "the coordinator exited"
echo "ok: the coordinator still serves"
