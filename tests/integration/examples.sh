# Every spec in examples/ runs as README.md writes it, from a folder where `examples` is
# the repository's (so relative paths resolve as from the repository's root and what the
# runs write stays in $TMP): the language models in full (a GPT on the GPL 3 of Debian's
# base-files, bytes as tokens, then pacer-generate from its checkpoint; LoRA adapters on
# its weights, and pacer-generate from their merged weights; the same text
# through the BPE of examples/data/bpe; token shards written by `pacer tokenize`; ZeRO
# stage 2 on 2 ranks under mpirun), each SUCCEEDING with a loss below a uniform guess; the
# image specs for 3 steps each (their data sets must load, their fields parse); the ASHA
# experiment submitted with `pacer experiment submit` to a coordinator and SUCCEEDING with
# a best trial. A spec added to examples/ that this script does not know, or that README.md
# does not name, fails it. An image spec whose data set is not here is skipped, said so.
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
GEN=$BUILD/pacer-generate
[ -x "$PACER" ] || skip "$PACER not built (libcurl missing?)"
[ -x "$GEN" ] || skip "$GEN not built"
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
case $WORKER in /*) W=$WORKER ;; *) W=$PWD/$WORKER ;; esac
case $PACER in /*) P=$PACER ;; *) P=$PWD/$PACER ;; esac
case $GEN in /*) G=$GEN ;; *) G=$PWD/$GEN ;; esac
REPO=$PWD
# the built-in data sets' folder as the tests have it (the worker's default, ../shared, is
# relative to where it runs)
export PACER_SHARED
RUN=$TMP/run
# examples/ as the repository has it, but for the licenses' folder, where `pacer tokenize
# examples/data/licenses` writes its shards beside the text: a folder of this run's
mkdir -p "$RUN/examples/data/licenses"
for f in "$REPO"/examples/*.json; do ln -s "$f" "$RUN/examples/"; done
ln -s "$REPO/examples/data/bpe" "$RUN/examples/data/bpe"
for f in train.txt val.txt; do ln -s "$(readlink -f "$REPO/examples/data/licenses/$f")" "$RUN/examples/data/licenses/$f"; done
cd "$RUN" || fail "cd $RUN"
# README.md names each spec (its table of capabilities links one per capability)
for f in "$REPO"/examples/*.json; do
    grep -q "examples/$(basename "$f")" "$REPO/README.md" || fail "README.md does not name examples/$(basename "$f")"
done

# lm NAME [MPIRUN -np N] - runs examples/NAME.json as written; its loss must be under a uniform guess
lm() {
    name=$1
    shift
    "$@" "$W" --spec "examples/$name.json" --summary "$name.summary.json" >"$name.log" 2>&1 ||
        { tail -20 "$name.log"; fail "examples/$name.json did not run: $* pacer-worker --spec examples/$name.json"; }
    uniform=$(jq '.vocab_size | log' "$name.summary.json")
    at_most "examples/$name.json's test_loss (nats per token; uniform $uniform)" "$(jq .test_loss "$name.summary.json")" "$uniform"
    echo "ok: examples/$name.json: $(grep '^final ' "$name.log")"
}
seen=""
lm gpt-licenses
seen="$seen gpt-licenses"
echo "This License" | "$G" --spec examples/gpt-licenses.json --checkpoint-dir checkpoints --temperature 0 --max-tokens 40 \
    >gen.jsonl 2>gen.err || { cat gen.err; fail "pacer-generate from examples/gpt-licenses.json's checkpoint failed"; }
jq -se 'last | .done == true and .tokens == 40 and (.text | length) > 0' gen.jsonl >/dev/null ||
    { tail -3 gen.jsonl; fail "pacer-generate gave no 40-token answer"; }
echo "ok: pacer-generate continues \"This License\": $(jq -s 'last | .text' gen.jsonl)"
lm gpt-lora
seen="$seen gpt-lora"
# rank 8 on 4 products of each of 2 blocks of width 64: 8 (IN + OUT) each, 64+192, 64+64,
# 64+256, 256+64: 8192 a block
jq -e '.init.loaded > 0 and .trainable_parameters == 16384 and .frozen_parameters > .trainable_parameters' \
    gpt-lora.summary.json >/dev/null ||
    fail "examples/gpt-lora.json: not adapters on gpt-licenses' weights: $(jq -c '{init, trainable_parameters, frozen_parameters}' gpt-lora.summary.json)"
echo "This License" | "$G" --spec examples/gpt-lora.json --checkpoint-dir checkpoints --temperature 0 \
    --max-tokens 20 >lora-gen.jsonl 2>lora-gen.err ||
    { cat lora-gen.err; fail "pacer-generate from examples/gpt-lora.json's checkpoint failed"; }
echo "ok: pacer-generate from the LoRA job's merged weights: $(jq -s 'last | .text' lora-gen.jsonl)"
lm gpt-bf16
seen="$seen gpt-bf16"
jq -e '.precision == "bf16" and (.kernels.gemm | endswith("-bf16"))' gpt-bf16.summary.json >/dev/null ||
    fail "examples/gpt-bf16.json did not run bf16 products: $(jq -c '{precision, kernels}' gpt-bf16.summary.json)"
lm gpt-bpe
seen="$seen gpt-bpe"
jq -e '.vocab_size == 512 and .dataset.tokenizer == "bpe"' gpt-bpe.summary.json >/dev/null ||
    fail "examples/gpt-bpe.json did not train over examples/data/bpe's 512 ids: $(jq -c '{vocab_size, t: .dataset.tokenizer}' gpt-bpe.summary.json)"
"$P" tokenize examples/data/licenses --tokenizer bytes >tokenize.log 2>&1 || { cat tokenize.log; fail "pacer tokenize failed"; }
lm gpt-tokens
seen="$seen gpt-tokens"
lm gpt-shard $MPIRUN -np 2
seen="$seen gpt-shard"
jq -e '.shard.stage == 2' gpt-shard.summary.json >/dev/null || fail "examples/gpt-shard.json did not shard: $(jq -c .shard gpt-shard.summary.json)"

# the image specs: 3 steps each, on as many processes as the spec's world
for f in examples/*.json; do
    name=$(basename "$f" .json)
    case " $seen " in *" $name "*) continue ;; esac
    case $name in experiment-*) continue ;; esac
    jq -e '.model | type == "string"' "$f" >/dev/null || fail "$f: a spec this script does not know how to run (add it here)"
    ds=$(jq -r '.dataset.name' "$f")
    workers=$(jq '.workers // 1' "$f")
    np=$workers
    case $(jq -r .algorithm.name "$f") in asgd | nsoftsync | dc-asgd | ddc-asgd | dbs-sgd) np=$((workers + 1)) ;; esac
    if [ "$np" -gt 1 ]; then run_it() { $MPIRUN -np "$np" "$W" "$@"; }; else run_it() { "$W" "$@"; }; fi
    if ! run_it --spec "$f" --stop-after-steps 3 >"$name.log" 2>&1; then
        if grep -q "^pacer-worker: .*: not found" "$name.log"; then
            echo "skip: $f: its data set $ds is not here ($(grep -m1 ': not found' "$name.log"))"
            continue
        fi
        tail -20 "$name.log"
        fail "$f did not run 3 steps"
    fi
    echo "ok: $f ran 3 steps on $np process(es)"
    seen="$seen $name"
done

# the experiment, through a coordinator, from the repository's root
cd "$REPO" || fail "cd $REPO"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord
BASE=$(api_base)
out=$("$P" --url "$BASE" experiment submit examples/experiment-asha.json) || fail "pacer experiment submit examples/experiment-asha.json failed"
X=$(echo "$out" | grep -o 'e-[0-9a-z-]*' | head -1)
[ -n "$X" ] || fail "pacer experiment submit printed '$out', want the experiment's id"
x_state() { curl -s "$BASE/api/v1/experiments/$X" | jq -r .state; }
x_ended() { case $(x_state) in SUCCEEDED | FAILED | CANCELLED) true ;; *) false ;; esac; }
await 240 "experiment $X to end" x_ended
curl -s "$BASE/api/v1/experiments/$X" >"$TMP/x.json"
jq -e '.state == "SUCCEEDED" and .best != null' "$TMP/x.json" >/dev/null || { jq -c '{state, reason, best}' "$TMP/x.json"; fail "experiment $X did not succeed with a best trial"; }
echo "ok: examples/experiment-asha.json: $(jq -c '{state, best}' "$TMP/x.json")"
stop_coord
