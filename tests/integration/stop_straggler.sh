# A rank that outlives mpirun (issue 45's preemption over a remote shell): the attempt's
# slots are not given to another job until its ranks are gone on every host, and a late
# checkpoint of an ended attempt is never taken. One host, "far" (2 slots), reached through
# a fake remote shell ($TMP/rsh: it runs the command on this machine in a session of its
# own, as a remote host's processes are: the coordinator's session kill does not reach
# them), --policy fair, --kill-grace 2. A low-priority 2-worker job runs and checkpoints;
# then a straggler is started "on far": a process in a session of its own whose command
# line names the job's spec and that ignores SIGTERM (a rank that would not go). A
# high-priority job comes and the low one is stopped. Checked by the order of the
# coordinator's log lines (one thread writes them: no timing involved): the coordinator
# killed the straggler through the remote shell (pkill) before the low job was requeued,
# and the high job was claimed only after that; the straggler is gone. Then both jobs
# SUCCEED, the low one resumed from its checkpoint; its checkpoint fence has ended both
# its attempts (2); and a late writer of its first attempt (pacer-worker --fence 0 on its
# spec: what a rank that no check saw would do) is refused with a message naming both
# generations, the job's checkpoint unchanged. Polls with deadlines.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
for c in setsid pgrep pkill sha256sum; do
    command -v "$c" >/dev/null || skip "$c not installed (util-linux, procps, coreutils)"
done

export PACER_TOKEN=straggler-token-$$
# The ranks "on far" are in sessions of their own: the usual cleanup does not reach them.
trap 'pkill -KILL -f "$STATE/jobs/j-[0-9]*/spec[.]json"; cleanup' EXIT
cat >"$TMP/rsh" <<SH
#!/bin/sh
# ssh-style: [options] HOST COMMAND...; the words joined and run by a shell "there".
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1; shift
echo "\$host: \$*" >>"$TMP/rsh.log"
exec setsid -w sh -c "\$*"
SH
chmod +x "$TMP/rsh"
export OMPI_MCA_plm_rsh_agent="$TMP/rsh"
printf 'far slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fair --preempt-min-run 0 --kill-grace 2
BASE=$(api_base)
spec2 "$TMP/lo.json" lo 8 low
spec2 "$TMP/hi.json" hi 1 high
lo=$(submit "$TMP/lo.json")
await 180 "job $lo to write a checkpoint" has_checkpoint "$lo" lo

spid_file=$TMP/straggler.pid
setsid sh -c 'echo $$ >"$1"; trap "" TERM; while :; do sleep 0.2; done' straggler "$spid_file" \
    "$STATE/jobs/$lo/spec.json" >/dev/null 2>&1 &
await 10 "the straggler to start" test -s "$spid_file"
spid=$(cat "$spid_file")
EXTRA_PIDS="$EXTRA_PIDS $spid"
kill -0 "$spid" || fail "the straggler did not start"

hi=$(submit "$TMP/hi.json")
await 120 "job $lo to be requeued" is_api_state "$lo" QUEUED
line() { grep -n "$1" "$TMP/coord.log" | head -1 | cut -d: -f1; }
k=$(line "job $lo: a rank of the attempt is still running on far after mpirun ended: killing it through the remote shell")
qd=$(line "job $lo: QUEUED: preempted by $hi")
[ -n "$k" ] || { tail -20 "$TMP/coord.log"; fail "no kill of $lo's straggler through the remote shell in the log"; }
[ -n "$qd" ] && [ "$k" -lt "$qd" ] || fail "$lo requeued (line ${qd:-none}) before its straggler was killed (line $k)"
grep -q "^far: pkill -KILL -f '\[/\]" "$TMP/rsh.log" || fail "no pkill through the remote shell: $(cat "$TMP/rsh.log")"
# gone: no such process, or a zombie this shell has not reaped yet
gone() { s=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$s" ] && [ "${s#Z}" = "$s" ] && return 1; return 0; }
await 10 "the straggler to be gone" gone "$spid"
await 120 "job $hi to be claimed" grep -q "job $hi: claimed" "$TMP/coord.log"
cl=$(line "job $hi: claimed")
[ "$cl" -gt "$qd" ] || fail "$hi claimed (line $cl) before $lo's slots were free (line $qd)"
echo "ok: $lo's straggler killed through the remote shell (log line $k), then $lo requeued ($qd), then $hi claimed ($cl)"

await 300 "job $hi to succeed" is_api_state "$hi" SUCCEEDED
await 300 "job $lo to succeed" is_api_state "$lo" SUCCEEDED
s=$(resumed_step "$lo")
[ -n "$s" ] && [ "$s" -gt 0 ] || fail "$lo did not resume from its checkpoint: $(grep -i resum "$STATE/jobs/$lo/log" | head -3)"
ck=$STATE/jobs/$lo/checkpoints
[ "$(cat "$ck/lo.fence")" = 2 ] || fail "$lo's fence is '$(cat "$ck/lo.fence")' after its two attempts, want 2"
echo "ok: $lo resumed at step $s and SUCCEEDED; its fence ended both attempts"

# A late writer of attempt 1 (generation 0): it trains and tries to publish its checkpoint.
before=$(sha256sum <"$ck/lo.ckpt")
if "$WORKER" --spec "$STATE/jobs/$lo/spec.json" --world 1 --fence 0 --stop-after-steps 10 >"$TMP/late.out" 2>&1; then
    fail "a late writer of generation 0 succeeded: $(tail -3 "$TMP/late.out")"
fi
grep -q "checkpoint not published: .*/lo.fence says generation 2, this attempt is 0 (the coordinator ended it)" \
    "$TMP/late.out" || fail "late writer: $(tail -3 "$TMP/late.out")"
[ "$(sha256sum <"$ck/lo.ckpt")" = "$before" ] || fail "the late writer replaced $lo's checkpoint"
[ ! -e "$ck/lo.ckpt.fence0" ] || fail "the late writer left lo.ckpt.fence0 behind"
echo "ok: a late writer of $lo's first attempt was refused; its checkpoint is unchanged"
stop_coord
