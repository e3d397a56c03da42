# The coordinator killed with SIGKILL mid-job, then started again on the same state dir:
# its embedded Redis (still running) is adopted; job A, whose processes survived, is
# adopted and finishes without a restart; job B, whose processes were killed while no
# coordinator ran (so it left no exit status), is resumed from its checkpoint, which
# counts as one restart; job D, which ran to its end while no coordinator ran, is found
# SUCCEEDED from the exit status it left, without a restart. Nothing submitted is lost.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
# Three slots whatever the machine has: a, b and d run side by side.
printf 'localhost slots=3\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts"

# a and b must outlive the steps below on any machine, d must end while no coordinator runs.
# a and b sleep through 30x their own step (emulate: sleeping, not spinning, and one rank
# each, so no peer spins in a collective either): their 192 steps last as long as 5,760 of
# d's, which trains its 160 at full speed, and a fast machine slows both alike. Trained at
# full speed for 100 epochs instead (as they were), they took 45 of this test's 52 CPU
# seconds on the 2-core machine.
slow() { jq '. + {"emulate": {"slowdown": [30]}}' "$1" >"$1.tmp" && mv "$1.tmp" "$1"; }
spec "$TMP/a.json" a 6 && slow "$TMP/a.json"
spec "$TMP/b.json" b 6 && slow "$TMP/b.json"
spec "$TMP/d.json" d 5
a=$(submit "$TMP/a.json")
b=$(submit "$TMP/b.json")
await 120 "job $a to checkpoint" has_checkpoint "$a" a
await 120 "job $b to checkpoint" has_checkpoint "$b" b
await 60 "job $b to run its worker" has_worker "$b"
d=$(submit "$TMP/d.json")
await 60 "job $d to run its worker" has_worker "$d"
kill -9 "$COORD_PID"
wait "$COORD_PID" 2>/dev/null
COORD_PID=""
kill_session "$(job_pid "$b")"
has_worker "$a" || fail "job $a died with the coordinator"
echo "ok: coordinator and job $b killed with SIGKILL; jobs $a and $d run on"
d_done() { [ -s "$STATE/jobs/$d/exit_code" ] && ! has_worker "$d"; }
await 120 "job $d to finish while no coordinator runs" d_done
[ "$(state_of "$d")" = RUNNING ] || fail "job $d is $(state_of "$d") with no coordinator to notice its end"
echo "ok: job $d ended while no coordinator ran (exit status $(cat "$STATE/jobs/$d/exit_code"))"
# A job submitted while no coordinator runs is queued and runs later.
spec "$TMP/c.json" c 2
c=$(submit "$TMP/c.json")
[ "$(state_of "$c")" = QUEUED ] || fail "job $c is $(state_of "$c")"

start_coord --hostfile "$TMP/hosts"
grep -q "adopted the running server" "$TMP/coord.log" || fail "embedded Redis was not adopted"
grep -q "job $a: adopted" "$TMP/coord.log" || fail "job $a was not adopted"
cli wait "$a" --timeout 600 || fail "job $a did not succeed"
cli wait "$b" --timeout 600 || { tail -30 "$STATE/jobs/$b/log"; fail "job $b did not succeed"; }
cli wait "$c" --timeout 600 || fail "job $c did not succeed"
cli wait "$d" --timeout 120 || fail "job $d: $(state_of "$d") ($(field_of "$d" reason)), want SUCCEEDED"
[ "$(field_of "$d" restarts)" = 0 ] || fail "job $d restarts = $(field_of "$d" restarts), want 0"
[ "$(field_of "$d" attempts)" = 1 ] || fail "job $d attempts = $(field_of "$d" attempts), want 1 (it must not run again)"
at_least "job $d summary test_accuracy" "$(field_of "$d" summary.test_accuracy)" 0.3
[ "$(field_of "$a" restarts)" = 0 ] || fail "job $a restarts = $(field_of "$a" restarts), want 0"
[ "$(field_of "$a" attempts)" = 1 ] || fail "job $a attempts = $(field_of "$a" attempts), want 1"
[ "$(field_of "$b" restarts)" = 1 ] || fail "job $b restarts = $(field_of "$b" restarts), want 1"
at_least "job $b resumed at step" "$(resumed_step "$b")" 10
# Issue 29: one test accuracy per epoch; job b's resumed attempt evaluated again the epochs
# it trained again, and the history shows those evaluations, the ones the run went on from.
for j in "$a" "$b" "$d"; do history_matches_log "$j"; done
echo "ok: $a adopted ($(job_states "$a")), $b resumed ($(job_states "$b")), $c ran after the restart, $d found finished ($(job_states "$d"))"
stop_coord
