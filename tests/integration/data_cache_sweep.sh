# The data cache's temporary files at daemon start (issue 42): a worker killed while it
# built a cache (a heartbeat timeout, the OOM killer) leaves NAME.pdc.tmp.PID.N, as large
# as the data set, that nothing else removes. pacer-coordinator removes, at start, those
# of processes that are gone, and logs each; a live process's (a build under way, by a
# hand-run worker or another daemon's job on this host) and every other file stay.
# The files are written here; the dead PID is above any Linux pid_max (2^22).
. tests/integration/coordinator_lib.inc
DC="$STATE/data-cache"
mkdir -p "$DC"
head -c 4096 /dev/zero >"$DC/set-0123.pdc.tmp.999999999.0"
head -c 10 /dev/zero >"$DC/set-0123.pdc.tmp.$$.1"
: >"$DC/set-0123.pdc"
: >"$DC/set-0123.pdc.lock"
: >"$DC/notes.tmp.txt"
start_coord
grep -q "data cache: removed $DC/set-0123.pdc.tmp.999999999.0 (4096 bytes)" "$TMP/coord.log" ||
    { cat "$TMP/coord.log"; fail "the daemon did not log the stale temporary file's removal"; }
[ ! -e "$DC/set-0123.pdc.tmp.999999999.0" ] || fail "the dead builder's temporary file is still there"
for f in "set-0123.pdc.tmp.$$.1" set-0123.pdc set-0123.pdc.lock notes.tmp.txt; do
    [ -e "$DC/$f" ] || fail "$f was removed"
done
echo "ok: at start: $(grep -o 'data cache: removed .*' "$TMP/coord.log")"
echo "ok: a live process's temporary file, the cache, its lock and other names stay"
stop_coord
