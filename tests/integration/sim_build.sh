# The simulated build: `make smpi` is up to date (make all built it), pacer-sim refuses
# bad input with exit status 2 and a line naming what is wrong, and a real pacer-worker
# run ignores a spec's "simulate" section.
. tests/integration/sim_lib.inc
need_sim
make --no-print-directory -q smpi BUILD="$BUILD" 2>/dev/null ||
    make --no-print-directory smpi BUILD="$BUILD" >"$TMP/make.log" 2>&1 || { tail -20 "$TMP/make.log"; fail "make smpi failed"; }
echo "ok: make smpi: $SMPI_WORKER $(ls build-smpi/libpacer_simshare.so) $SIM $PLATFORM_GEN"
"$SIM" --version | grep -q '^pacer-sim ' || fail "pacer-sim --version"
"$SIM" --help | grep -q -- '--summary FILE' || fail "pacer-sim --help"

need_fashion
sim_spec "$TMP/ok.json" '{}'
expect_error 2 "--summary FILE is required" "$SIM" --spec "$TMP/ok.json"
expect_error 2 "worker options go after --" "$SIM" --spec "$TMP/ok.json" --summary "$TMP/x" extra
expect_error 2 "white space" "$SIM" --spec "$TMP/ok.json" --summary "$TMP/a b"
expect_error 2 "expected NAME:VALUE" "$SIM" --spec "$TMP/ok.json" --summary "$TMP/x" --cfg smpi-bw-factor
expect_error 2 "white space" "$SIM" --spec "$TMP/ok.json" --summary "$TMP/x" --cfg "smpi/bw-factor:0 1"
expect_error 1 "Bad config key: smpi/no-such-setting" "$SIM" --spec "$TMP/ok.json" --summary "$TMP/x" --cfg smpi/no-such-setting:1
expect_error 2 "make smpi" "$SIM" --spec "$TMP/ok.json" --summary "$TMP/x" --worker "$TMP/none"
expect_error 2 "/nonexistent.json" "$SIM" --spec /nonexistent.json --summary "$TMP/x"
sim_spec "$TMP/b1.json" '{"simulate": {"slowdown": [1, 2]}}'
expect_error 2 "simulate.slowdown: has 2 entries, workers is 4" "$SIM" --spec "$TMP/b1.json" --summary "$TMP/x"
sim_spec "$TMP/b2.json" '{"simulate": {"bandwidth_gbps": 0}}'
expect_error 2 "simulate.bandwidth_gbps: must be in (0, 100000]" "$SIM" --spec "$TMP/b2.json" --summary "$TMP/x"
sim_spec "$TMP/b3.json" '{"simulate": {"gpus_per_node": 2, "slowdown": [1, 2, 2, 2]}}'
expect_error 2 "simulate.slowdown\[1\]: must equal simulate.slowdown\[0\]" "$SIM" --spec "$TMP/b3.json" --summary "$TMP/x"
sim_spec "$TMP/b4.json" '{"simulate": {"platform": "sim/platforms/hetero-1124.xml", "slowdown": [1, 1, 2, 4]}}'
expect_error 2 "not used with simulate.platform" "$SIM" --spec "$TMP/b4.json" --summary "$TMP/x"
sim_spec "$TMP/b5.json" '{"simulate": {"platform": "a b.xml"}}'
expect_error 2 "simulate.platform: may contain only" "$SIM" --spec "$TMP/b5.json" --summary "$TMP/x"
sim_spec "$TMP/b6.json" '{"simulate": {"platform": "/nonexistent.xml"}}'
expect_error 2 "/nonexistent.xml: No such file" "$SIM" --spec "$TMP/b6.json" --summary "$TMP/x"
sim_spec "$TMP/b7.json" '{"dataset": {"path": "/nonexistent"}}'
expect_error 2 "/nonexistent/train-images-idx3-ubyte: not found" "$SIM" --spec "$TMP/b7.json" --summary "$TMP/x"

# A real run trains the same spec and ignores "simulate" (no simulated fields).
sim_spec "$TMP/real.json" '{"workers": 1, "algorithm": {"name": "sgd"}, "epochs": 1,
    "simulate": {"slowdown": [4], "bandwidth_gbps": 1}}'
"$WORKER" --spec "$TMP/real.json" --summary "$TMP/real.out" >"$TMP/real.log" 2>&1 || { cat "$TMP/real.log"; fail "real run"; }
[ "$(json "$TMP/real.out" '.simulated // "absent"')" = absent ] || fail "a real run's summary says simulated"
echo "ok: a real run ignores the simulate section"
