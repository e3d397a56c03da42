# The rooms keep their shape: no circle of calls between the object files of worker/,
# coordinator/ or model/onnx/ (a file that calls up into a file that calls it: the
# scheduler apart from a job's run, hosts.c no longer calling the tick, the importer's
# wire-format bounds given the memory bound instead of calling import.c for it), and no
# circle of includes between worker/'s modules (a header per file; the MPI floor,
# comm_mpi.h, below comm.h's orchestration) nor between coordinator/'s modules or headers.
# tools/code_shape.py measures them; this also checks that it can see a circle, on two
# objects made here that call each other.
. tests/lib.sh
command -v python3 >/dev/null || skip "python3 not installed"
command -v nm >/dev/null || skip "nm not installed"
for room in worker coordinator model/onnx; do
    [ -d "$BUILD/obj/$room" ] || skip "$BUILD/obj/$room not built"
    out=$(python3 tools/code_shape.py circles "$BUILD/obj/$room") || fail "code_shape.py circles $room"
    echo "$room: $out"
    echo "$out" | grep -q "largest strongly connected component: 1 file(s)" || fail "a circle of calls in $room/: $out"
done
out=$(python3 tools/code_shape.py includes worker) || fail "code_shape.py includes worker"
echo "worker includes: $out"
echo "$out" | grep -q "largest circle of includes: 1 module(s)" || fail "a circle of includes in worker/: $out"
# coordinator/: no circle of includes between its modules (x.c and x.h together). The
# object (coord_internal.h) holds a pointer to each part's state, declared in the part's
# header (hosts.h, drain.h, ...), so it includes none of them while every part includes
# it; coordinator.h, the public API that nine files implement, includes no part, and the
# daemon's top (daemon.c, which includes every part) has no header. A circle fails here,
# named with the includes that make it.
out=$(python3 tools/code_shape.py includes coordinator) || fail "code_shape.py includes coordinator"
echo "coordinator includes: $(echo "$out" | head -1)"
echo "$out" | grep -q "largest circle of includes: 1 module(s)" || fail "a circle of includes between coordinator/'s modules: $out"
out=$(python3 tools/code_shape.py headers coordinator) || fail "code_shape.py headers coordinator"
echo "coordinator headers: $out"
echo "$out" | grep -q "largest circle of includes: 1 header(s)" || fail "a circle of includes between coordinator/'s headers: $out"

# the check itself: a.o calls b(), b.o calls a()
mkdir -p "$TMP/obj" "$TMP/src"
printf 'int b(int);\nint a(int x) { return x > 0 ? b(x - 1) : 0; }\n' >"$TMP/src/a.c"
printf 'int a(int);\nint b(int x) { return x > 0 ? a(x - 1) : 1; }\n' >"$TMP/src/b.c"
printf '#include "b.h"\n' >"$TMP/src/a.h"
printf '#include "a.h"\n' >"$TMP/src/b.h"
cc -c "$TMP/src/a.c" -o "$TMP/obj/a.o" && cc -c "$TMP/src/b.c" -o "$TMP/obj/b.o" || fail "cc"
out=$(python3 tools/code_shape.py circles "$TMP/obj")
echo "$out" | grep -q "component: 2 file(s)" || fail "circles missed a.o <-> b.o: $out"
out=$(python3 tools/code_shape.py includes "$TMP/src")
echo "$out" | grep -q "includes: 2 module(s)" || fail "includes missed a.h <-> b.h: $out"
echo "$out" | grep -q "a.h -> b.h" || fail "includes did not name the include a.h -> b.h: $out"
out=$(python3 tools/code_shape.py headers "$TMP/src")
echo "$out" | grep -q "includes: 2 header(s)" || fail "headers missed a.h <-> b.h: $out"
# an include of a header the folder lacks (another room's) is no edge to the module of
# the same name: c.c includes "d.h" (not here), d.c includes c.h
mkdir -p "$TMP/src2"
printf '#include "d.h"\n' >"$TMP/src2/c.c"
printf 'int c;\n' >"$TMP/src2/c.h"
printf '#include "c.h"\n' >"$TMP/src2/d.c"
out=$(python3 tools/code_shape.py includes "$TMP/src2")
echo "$out" | grep -q "includes: 1 module(s)" || fail "includes took d.h from elsewhere for d.c's module: $out"
echo "ok: a circle of two calls and of two includes is seen"

# No product file over 1,500 lines (tests, fuzzers, benchmarks and docs aside): one
# subsystem a file. WAITING names the files not split yet.
WAITING=""
long=$(git ls-files '*.c' '*.h' '*.cu' '*.js' '*.py' '*.sh' | grep -v '^\(tests\|fuzz\|bench\|docs\)/' |
    while read -r f; do
        n=$(wc -l <"$f")
        [ "$n" -gt 1500 ] || continue
        case " $WAITING " in *" $f "*) echo "waiting: $f, $n lines" >&2 ;; *) echo "$f: $n lines" ;; esac
    done)
[ -z "$long" ] || fail "product files over 1,500 lines: $long"
echo "ok: no product file over 1,500 lines but the ones waiting"
