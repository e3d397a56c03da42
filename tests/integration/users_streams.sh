# An event stream lives only as long as the user token it was opened with (http/sse.c):
# against the real coordinator with a daemon token, streams opened with a user's token
# (the Authorization header, and ?access_token= as the dashboard's EventSource sends it)
# end with a final "event: error" frame naming why once the user is removed (a job's
# stream and the all-jobs stream), once the token is renewed (POST /api/v1/token), and
# once it expires (a user added with expires_in_s); every end is polled with a deadline.
# Streams of the daemon's token, of a user whose token still stands and of the renewed
# token stay open meanwhile, with no such frame.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

start_coord_admin

ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1
CAROL=$(adduser carol viewer) || exit 1

# stream_open NAME TOKEN PATH [header|query] - a stream in the background (curl -N): its frames in
# $TMP/NAME.sse, curl's exit status in $TMP/NAME.rc once it ends. Returns once the stream
# has sent its first frame (retry:), so that it was opened while the token stood.
stream_open() {
    if [ "${4:-header}" = query ]; then
        (curl -sN --max-time 300 "$BASE$3?access_token=$2" >"$TMP/$1.sse" 2>/dev/null
            echo $? >"$TMP/$1.rc") &
    else
        (curl -sN --max-time 300 -H "Authorization: Bearer $2" "$BASE$3" >"$TMP/$1.sse" 2>/dev/null
            echo $? >"$TMP/$1.rc") &
    fi
    EXTRA_PIDS="$EXTRA_PIDS $!"
    await 20 "$1's stream to open" grep -q '^retry: 2000' "$TMP/$1.sse"
}
ended() { [ -s "$TMP/$1.rc" ]; }
# final NAME REASON USER - the stream NAME ended (curl exit 0: the server closed it) and its
# last frame is "event: error" with that reason and the detail naming USER.
final() {
    await 20 "$1's stream to end ($2)" ended "$1"
    [ "$(cat "$TMP/$1.rc")" = 0 ] || { cat "$TMP/$1.sse"; fail "$1's stream: curl exited $(cat "$TMP/$1.rc")"; }
    grep -v '^$' "$TMP/$1.sse" | tail -2 >"$TMP/$1.last"
    [ "$(head -1 "$TMP/$1.last")" = "event: error" ] || { cat "$TMP/$1.sse"; fail "$1's stream: no final 'event: error'"; }
    sed -n 's/^data: //p' "$TMP/$1.last" >"$TMP/$1.data"
    jq -e --arg r "$2" --arg u "$3" '.type == "error" and .reason == $r and
        (.detail | startswith("the user " + $u + " ")) and (.detail | endswith("this stream ends; open it again with a valid token"))' \
        "$TMP/$1.data" >/dev/null || { cat "$TMP/$1.sse"; fail "$1's stream: final frame is not reason $2 for $3"; }
    echo "ok: $1's stream ended: $(jq -r .detail "$TMP/$1.data")"
}
# alive NAME - the stream NAME is still open and sent no error frame.
alive() {
    ended "$1" && { cat "$TMP/$1.sse"; fail "$1's stream ended; it should still be open"; }
    grep -q '^event: error' "$TMP/$1.sse" && { cat "$TMP/$1.sse"; fail "$1's stream sent an error frame"; }
    return 0
}

# Streams that must outlive everything below: the daemon's token and carol's.
stream_open admin "$ADMIN" /api/v1/events
stream_open carol "$CAROL" /api/v1/events query

# ---- a removed user: their job's stream and their all-jobs stream end ------------------------------------------
spec "$TMP/long.json" long 1000
ok 201 "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
J=$(jq -r .id "$TMP/body")
stream_open bobjob "$BOB" "/api/v1/jobs/$J/events"
stream_open boball "$BOB" /api/v1/events query
ok 204 "$ADMIN" DELETE /api/v1/users/bob
final bobjob user-removed bob
final boball user-removed bob
jq -e '.detail == "the user bob was removed: this stream ends; open it again with a valid token"' "$TMP/bobjob.data" \
    >/dev/null || { cat "$TMP/bobjob.data"; fail "bob's job stream: the detail"; }
# The job is still there: its stream ended for bob's sake, not the job's.
is_api_state "$J" QUEUED || is_api_state "$J" RUNNING || fail "$J ended with bob's stream"

# ---- a renewed token: the stream of the old one ends, the new one's stays -------------------------------------
stream_open alice "$ALICE" /api/v1/events
ok 200 "$ALICE" POST /api/v1/token
ALICE2=$(jq -r .token "$TMP/body")
stream_open alice2 "$ALICE2" /api/v1/events
final alice token-replaced alice

# ---- an expired token ------------------------------------------------------------------------------------------
DAVE=$(adduser dave member 8) || exit 1
stream_open dave "$DAVE" /api/v1/events query
await 60 "dave's stream to end (token-expired)" ended dave
final dave token-expired dave

# Meanwhile new events (a state change of $J) reached the streams that stand, and only them.
call "$ADMIN" DELETE "/api/v1/jobs/$J" >/dev/null
for s in admin carol alice2; do
    await 30 "$J's CANCELLED event on $s's stream" grep -q "\"job\":\"$J\".*CANCELLED\|CANCELLED.*\"job\":\"$J\"" "$TMP/$s.sse"
    alive "$s"
done
for s in bobjob boball alice dave; do
    grep -q 'CANCELLED' "$TMP/$s.sse" && { cat "$TMP/$s.sse"; fail "$s's ended stream got $J's CANCELLED event"; }
done
echo "ok: the daemon's token, a standing user's and a renewed token's streams stay open and get new events"
