# The numeric helpers of tests/lib.sh themselves: each passes on numbers that satisfy it
# and fails on numbers that do not AND on every non-number (a missing summary field reads
# as "null" from jq, a diverged run as "nan" or "inf"), so no accuracy check can pass on
# a value that is not there. Each check runs in a subshell because fail() exits.
. tests/lib.sh
passes() { ( "$@" ) >"$TMP/out" 2>&1 || { cat "$TMP/out"; echo "FAIL: '$*' failed, want pass"; exit 1; }; }
fails() {
    if ( "$@" ) >"$TMP/out" 2>&1; then cat "$TMP/out"; echo "FAIL: '$*' passed, want fail"; exit 1; fi
    grep -q '^FAIL: ' "$TMP/out" || { cat "$TMP/out"; echo "FAIL: '$*' failed without a FAIL line"; exit 1; }
}
for v in 0 1 -2 0.5 .5 3. 1e-4 -2.5E+3 +7; do
    passes is_number "$v"
done
for v in null nan NaN -nan inf -inf Infinity "" " " "1 2" abc 0x10 1e 1.2.3 "--1" "0.5 "; do
    if is_number "$v"; then echo "FAIL: is_number accepted '$v'"; exit 1; fi
done
echo "ok: is_number accepts decimals and refuses null, nan, inf, empty and text"

passes at_least acc 0.9 0.85
passes at_least acc 0.85 0.85
passes at_least big 1e3 999
fails at_least acc 0.84 0.85
passes at_most r 1.1 1.2
fails at_most r 1.3 1.2
passes between x 2 1 3
fails between x 4 1 3
fails between x 0 1 3
passes equals_num n 1.0 1
fails equals_num n 1.5 1
passes ratio_at_least r 3 1 3
fails ratio_at_least r 2.9 1 3
fails ratio_at_least r 3 0 1
for bad in null nan NaN inf -inf "" abc; do
    fails at_least acc "$bad" 0.85
    fails at_least acc 0.9 "$bad"
    fails at_most r "$bad" 1.2
    fails between x "$bad" 0 1
    fails equals_num n "$bad" 1
    fails ratio_at_least r "$bad" 1 1
    fails ratio_at_least r 1 "$bad" 1
    fails need_number v "$bad"
done
echo "ok: at_least, at_most, between, equals_num, ratio_at_least fail on null, nan, inf, empty and text"
