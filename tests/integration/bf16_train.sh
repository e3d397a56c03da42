# precision bf16 end to end (kernels/cpu/matmul.h): the built-in GPT (2 blocks, 2 heads, width
# 32, block 32) on the GNU licenses of Debian's base-files trains with bf16 products on the
# path the CPU has, its summary saying which (kernels.gemm, per rank device.gemm, checked
# against /proc/cpuinfo's flags); PACER_CPU_ISA=portable runs the portable path and says
# why; a bad PACER_CPU_ISA and bf16 on device cuda are refused by name. A bf16 run stopped
# after 12 steps and resumed ends bit for bit where the uninterrupted one does (float32
# weights and AdamW moments in the checkpoint), and its checkpoint resumes as an fp32 job
# too. LeNet-5 (convolutions through their GEMM at bf16) trains a few steps. The closeness
# of bf16 and fp32 losses after training is docs/RESULTS.md's, over seeds, not this test's.
. tests/lib.sh
LIC=/usr/share/common-licenses
[ -r "$LIC/GPL-3" ] && [ -r "$LIC/LGPL-2.1" ] || skip "$LIC (Debian's base-files) is not here"
mkdir -p "$TMP/text"
cp "$LIC/GPL-3" "$TMP/text/train.txt"
head -c 8192 "$LIC/LGPL-2.1" >"$TMP/text/val.txt"
spec() { # NAME PRECISION DIR
    jq -n --arg data "$TMP/text" --arg name "$1" --arg p "$2" --arg dir "$3" \
        '{name: $name, model: {gpt: {layers: 2, heads: 2, embd: 32, block_size: 32}}, precision: $p,
          dataset: {format: "text", path: $data, train_subset: 256, test_subset: 64},
          batch_size: 8, epochs: 1, seed: 5, device: "cpu", log_every: 0,
          checkpoint: {every_steps: 4, dir: $dir},
          optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.1}}' >"$TMP/$1.json"
}
spec a bf16 "$TMP/a"
spec b bf16 "$TMP/b"
spec f fp32 "$TMP/f"
$WORKER --spec "$TMP/a.json" --summary "$TMP/a.sum" >"$TMP/a.log" 2>&1 || { tail "$TMP/a.log"; fail "bf16 run failed"; }
S="$TMP/a.sum"
jq -c '{precision, kernels, test_loss, device: .per_rank[0].device}' "$S"
[ "$(json "$S" .precision)" = bf16 ] || fail "summary precision $(json "$S" .precision), want bf16"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
want=portable-bf16
case " $flags " in *" avx512_bf16 "*) want=avx512-bf16 ;; esac
case " $flags " in *" amx_bf16 "*) case " $flags " in *" amx_tile "*) want=amx-bf16 ;; esac ;; esac
got=$(json "$S" .kernels.gemm)
# a kernel that refuses the tile state leaves the CPU's AVX512-BF16, and says so
if [ "$got" != "$want" ] && ! { [ "$want" = amx-bf16 ] && [ "$got" = avx512-bf16 ] &&
    json "$S" .per_rank[0].device.gemm_reason | grep -q 'refused the AMX tile state'; }; then
    fail "kernels.gemm $got on a CPU whose flags say $want"
fi
[ "$(json "$S" .per_rank[0].device.gemm)" = "$got" ] || fail "per_rank[0].device.gemm differs from kernels.gemm"
at_most "bf16 test_loss (a uniform guess over 256 bytes is 5.55)" "$(json "$S" .test_loss)" 5.0
echo "ok: a bf16 GPT trains on $got (this CPU's flags say $want), test_loss $(json "$S" .test_loss)"

PACER_CPU_ISA=portable $WORKER --spec "$TMP/a.json" --summary "$TMP/p.sum" --stop-after-steps 3 >"$TMP/p.log" 2>&1 ||
    { tail "$TMP/p.log"; fail "PACER_CPU_ISA=portable run failed"; }
[ "$(json "$TMP/p.sum" .kernels.gemm)" = portable-bf16 ] || fail "PACER_CPU_ISA=portable ran $(json "$TMP/p.sum" .kernels.gemm)"
if [ "$want" != portable-bf16 ]; then
    json "$TMP/p.sum" .per_rank[0].device.gemm_reason | grep -q 'PACER_CPU_ISA caps it at portable' ||
        fail "the capped run does not say why: $(json "$TMP/p.sum" .per_rank[0].device.gemm_reason)"
fi
echo "ok: PACER_CPU_ISA=portable runs portable-bf16 and says why"
PACER_CPU_ISA=sse9 expect_error 2 "PACER_CPU_ISA=sse9: want portable, avx512_bf16 or amx" \
    $WORKER --spec "$TMP/a.json" --summary "$TMP/x.sum"
jq '.device = "cuda"' "$TMP/a.json" >"$TMP/cuda.json"
expect_error 2 "precision bf16: implemented on CPU ranks only" $WORKER --spec "$TMP/cuda.json"

$WORKER --spec "$TMP/f.json" --summary "$TMP/f.sum" >"$TMP/f.log" 2>&1 || { tail "$TMP/f.log"; fail "fp32 run failed"; }
[ "$(json "$TMP/f.sum" .precision)/$(json "$TMP/f.sum" .kernels.gemm)" = fp32/openblas-fp32 ] ||
    fail "the fp32 run says $(json "$TMP/f.sum" .precision)/$(json "$TMP/f.sum" .kernels.gemm)"
[ "$(json "$TMP/f.sum" .test_loss)" != "$(json "$S" .test_loss)" ] || fail "bf16 and fp32 runs gave the same loss"
echo "ok: fp32 says openblas-fp32; its loss $(json "$TMP/f.sum" .test_loss) differs from bf16's"

# bit for bit on resume: float32 weights and moments, whatever the products' precision
$WORKER --spec "$TMP/b.json" --stop-after-steps 12 >/dev/null 2>&1 || fail "interrupted bf16 run failed"
$WORKER --spec "$TMP/b.json" --resume >"$TMP/r.log" 2>&1 || { tail "$TMP/r.log"; fail "bf16 resume failed"; }
grep -q "resumed from .* at step 12" "$TMP/r.log" || { tail "$TMP/r.log"; fail "did not resume at step 12"; }
cmp "$TMP/a/a.ckpt" "$TMP/b/b.ckpt" || fail "the resumed bf16 run differs from the uninterrupted one"
echo "ok: a bf16 run stopped at step 12 and resumed ends bit for bit where the whole run ends"
# ... and as an fp32 job
spec c bf16 "$TMP/c"
spec g fp32 "$TMP/g"
$WORKER --spec "$TMP/c.json" --stop-after-steps 12 >/dev/null 2>&1 || fail "interrupted bf16 run c failed"
$WORKER --spec "$TMP/g.json" --resume-from "$TMP/c/c.ckpt" --summary "$TMP/g.sum" >"$TMP/g.log" 2>&1 ||
    { tail "$TMP/g.log"; fail "the bf16 checkpoint does not resume as fp32"; }
grep -q "resumed from .* at step 12" "$TMP/g.log" || { tail "$TMP/g.log"; fail "fp32 did not resume at step 12"; }
[ "$(json "$TMP/g.sum" .precision)" = fp32 ] || fail "the fp32 resume says $(json "$TMP/g.sum" .precision)"
echo "ok: a bf16 checkpoint resumes as an fp32 job"

need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat >"$TMP/l.json" <<JSON
{"name": "l", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 1024, "test_subset": 128},
 "precision": "bf16", "batch_size": 32, "epochs": 1, "seed": 1, "log_every": 0, "device": "cpu",
 "optimizer": {"lr": 0.1, "momentum": 0.9}}
JSON
$WORKER --spec "$TMP/l.json" --summary "$TMP/l.sum" >"$TMP/l.log" 2>&1 || { tail "$TMP/l.log"; fail "bf16 LeNet-5 failed"; }
jq -e '.test_accuracy > 0.3' "$TMP/l.sum" >/dev/null || fail "bf16 LeNet-5 test_accuracy $(json "$TMP/l.sum" .test_accuracy)"
echo "ok: LeNet-5 trains at bf16 (test_accuracy $(json "$TMP/l.sum" .test_accuracy) after 32 steps; 10 classes)"
