# Arrows point down: each room compiles with only the rooms it may use on its include
# path (Makefile, "rooms"), so an include that points the wrong way does not compile.
# `make check-layers` tries every pair of LAYER_REFUSED (each header must compile in its
# own room and must not be found from the other) and LAYER_ALLOWED (must compile); this
# also checks that the check itself can fail, by widening one room's include path.
. tests/lib.sh
make --no-print-directory -s check-layers || fail "make check-layers"
if make --no-print-directory -s check-layers INC_kernels="-Ikernels/cpu -Imodel -Icommon" >"$TMP/out" 2>&1; then
    cat "$TMP/out"
    fail "check-layers passed with kernels/ allowed to include model/"
fi
grep -q "kernels can include model.h" "$TMP/out" || { cat "$TMP/out"; fail "check-layers did not name the wrong-way include"; }
echo "ok: a kernels -> model include is caught"
