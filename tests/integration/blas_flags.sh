# OpenBLAS's kernels by the CPU's flags (kernels/cpu/blas_core.h): OpenBLAS 0.3.21 picks by
# the CPU's model number and runs SSE3 (Prescott) kernels on a model it does not know. A CPU
# it does not know cannot be made up here, so PACER_BLAS_PICKED=Prescott stands in for its
# choice: the worker then runs itself again with OPENBLAS_CORETYPE set by the flags
# (SkylakeX with AVX-512, Haswell with AVX2 and FMA) and its summary says so, on one rank
# and on two under mpirun; a user's OPENBLAS_CORETYPE is kept, Prescott included. The
# first two parts run without OPENBLAS_CORETYPE whatever the caller set (make
# test-kernels sets it), since they check the choice made when nobody set it.
. tests/lib.sh
flags=$(grep -m1 '^flags' /proc/cpuinfo)
want=
case " $flags " in *" avx2 "*) case " $flags " in *" fma "*) want=Haswell ;; esac ;; esac
case " $flags " in *" avx512f "*) case " $flags " in *" avx512bw "*) case " $flags " in *" avx512vl "*)
    case " $flags " in *" avx512dq "*) case " $flags " in *" avx512cd "*) want=SkylakeX ;; esac ;; esac ;; esac ;; esac ;; esac
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
[ -n "$want" ] || skip "this CPU has neither AVX2 with FMA nor AVX-512: OpenBLAS's own choice is all there is"
spec() { # FILE WORKERS
    cat >"$1" <<JSON
{"name": "blas", "model": "mlp", "dataset": {"name": "fashion-mnist", "train_subset": 256, "test_subset": 64},
 "algorithm": {"name": "ssgd"}, "workers": $2, "batch_size": 32, "epochs": 1, "seed": 1, "log_every": 0, "device": "cpu"}
JSON
}
spec "$TMP/spec.json" 1
spec "$TMP/spec2.json" 2
env -u OPENBLAS_CORETYPE PACER_BLAS_PICKED=Prescott $WORKER --spec "$TMP/spec.json" --summary "$TMP/a.json" >"$TMP/a.log" 2>&1 ||
    { tail "$TMP/a.log"; fail "the worker failed after choosing OpenBLAS's kernels"; }
jq -c '.per_rank[0].device' "$TMP/a.json"
[ "$(json "$TMP/a.json" .per_rank[0].device.blas)" = "$want" ] ||
    fail "OpenBLAS took Prescott, the worker runs $(json "$TMP/a.json" .per_rank[0].device.blas), the flags say $want"
[ "$(json "$TMP/a.json" .per_rank[0].device.blas_reason.openblas_took)" = Prescott ] || fail "the summary does not say OpenBLAS took Prescott"
echo "ok: OpenBLAS's Prescott replaced by $want, by the CPU's flags, and the summary says so"
env -u OPENBLAS_CORETYPE PACER_BLAS_PICKED=Prescott $MPIRUN -np 2 $WORKER --spec "$TMP/spec2.json" --summary "$TMP/m.json" >"$TMP/m.log" 2>&1 ||
    { tail "$TMP/m.log"; fail "two ranks failed after choosing OpenBLAS's kernels"; }
[ "$(jq -r '[.per_rank[].device.blas] | unique | join(",")' "$TMP/m.json")" = "$want" ] ||
    fail "ranks under mpirun run $(jq -c '[.per_rank[].device.blas]' "$TMP/m.json")"
echo "ok: two ranks under mpirun both run $want"
OPENBLAS_CORETYPE=Prescott PACER_BLAS_PICKED=Prescott $WORKER --spec "$TMP/spec.json" --summary "$TMP/u.json" >/dev/null 2>&1 ||
    fail "the worker failed on the user's OPENBLAS_CORETYPE"
[ "$(json "$TMP/u.json" .per_rank[0].device.blas)/$(json "$TMP/u.json" .per_rank[0].device.blas_reason)" = Prescott/null ] ||
    fail "the user's OPENBLAS_CORETYPE=Prescott was not kept: $(jq -c .per_rank[0].device "$TMP/u.json")"
echo "ok: a user's OPENBLAS_CORETYPE is kept"
