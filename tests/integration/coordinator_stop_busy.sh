# The daemon exits 0 on SIGTERM while clients keep connecting. libmicrohttpd 0.9.75
# (Debian 12) aborts the process ("Failed to remove listen FD from epoll set", exit 134)
# when MHD_quiesce_daemon and a pool thread both take the listening socket out of that
# thread's epoll set; a CI run met it once, after a DELETE and SIGTERM. http_stop no
# longer quiesces. tests/shims/epoll_del_delay.so widens the window from a microsecond to
# 2 ms, so a daemon that still quiesced aborts in nearly every round (the build before the
# fix, `sh tests/run.sh OLD_BUILD only coordinator_stop_busy`, failed in its first);
# ROUNDS daemons, each stopped while four clients connect without pause, and one abort
# fails the test.
. tests/integration/coordinator_lib.inc
ROUNDS=${ROUNDS:-8}
SHIM=$BUILD/tests/shims/epoll_del_delay.so
[ -f "$SHIM" ] || fail "$SHIM not built (make)"
command -v python3 >/dev/null || skip "python3 not installed (make deps)"

# clients PORT FILE - four processes that connect, ask for /healthz and close, until the
# daemon is gone (a refused connection ends a client) or 60 s have passed (another daemon
# may take the port over: no client outlives the test); FILE appears once one was
# answered. The first process waits for the other three, so waiting for it waits for all.
clients() {
    python3 - "$1" "$2" <<'PY' &
import os, socket, sys, time
port, served = int(sys.argv[1]), sys.argv[2]
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        kids = None
        break
    kids.append(pid)
req = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(req)
        if s.recv(4096).startswith(b"HTTP/1.1 200"):
            open(served, "w").close()
        s.close()
    except ConnectionRefusedError:
        break
    except OSError:
        pass
for pid in kids or []:
    os.waitpid(pid, 0)
PY
    CLIENTS=$!
    EXTRA_PIDS="$EXTRA_PIDS $CLIENTS"
}

i=0
while [ $i -lt "$ROUNDS" ]; do
    i=$((i + 1))
    export LD_PRELOAD="$SHIM"
    start_coord --http-threads 4
    unset LD_PRELOAD
    rm -f "$TMP/served"
    clients "$(api_base | sed 's/.*://')" "$TMP/served"
    # served, then stopped at a point that differs from round to round
    await 30 "a client's request to be served" test -e "$TMP/served"
    sleep "0.$((i % 5 + 1))"
    stop_coord
    wait "$CLIENTS"
    if grep -q "Fatal error in GNU libmicrohttpd" "$TMP/coord.log"; then
        tail -5 "$TMP/coord.log"
        fail "round $i: libmicrohttpd panicked"
    fi
    : >"$TMP/coord.log"
done
echo "ok: $ROUNDS daemons stopped by SIGTERM under four clients' connections (epoll removal slowed), each exited 0"
