# tests/webhook_receiver.py PORTFILE OUT - a webhook receiver for the integration tests
# (webhooks.sh, notice.sh, experiment.sh): listens on a free port of 127.0.0.1 (written to
# PORTFILE), appends each POST as one JSON line {"path", "signature", "event", "delivery",
# "body"} to OUT and answers 204.
#
# tests/webhook_receiver.py check OUT PATH SECRET EVENT=ID... - the deliveries OUT has at
# PATH are exactly those events, each once: EVENT its X-Pacer-Event and its body's event,
# ID the job or experiment its body's data names, X-Pacer-Signature the HMAC-SHA256 of the
# body under SECRET, X-Pacer-Delivery its body's delivery. Exit 0 with one line saying what
# came, else 1 with what is wrong.
#
# tests/webhook_receiver.py hang PORTFILE OUT - a receiver that never answers: it reads
# each request, appends its first line to OUT and keeps the connection open, silent.
import hashlib, hmac, http.server, json, os, sys


def check(out, path, secret, wanted):
    recs = [json.loads(line) for line in open(out) if line.strip()] if os.path.exists(out) else []
    recs = [r for r in recs if r["path"] == path]
    got, bad = [], []
    for r in recs:
        body = json.loads(r["body"])
        data = body.get("data", {})
        subject = data.get("job") if r["event"].startswith("job.") else data.get("experiment")
        got.append("%s=%s" % (r["event"], subject))
        sig = "sha256=" + hmac.new(secret.encode(), r["body"].encode(), hashlib.sha256).hexdigest()
        if r["signature"] != sig:
            bad.append("%s=%s: signature %s, want %s" % (r["event"], subject, r["signature"], sig))
        if body.get("event") != r["event"] or body.get("delivery") != r["delivery"]:
            bad.append("%s=%s: the headers and the body disagree: %s" % (r["event"], subject, r))
        state = {"job.succeeded": "SUCCEEDED", "job.failed": "FAILED", "job.cancelled": "CANCELLED",
                 "experiment.succeeded": "SUCCEEDED", "experiment.failed": "FAILED"}.get(r["event"])
        if state and data.get("state") != state:
            bad.append("%s=%s: data.state %s" % (r["event"], subject, data.get("state")))
    if sorted(got) != sorted(wanted):
        bad.append("at %s got %s, want each of %s once" % (path, sorted(got), sorted(wanted)))
    if bad:
        sys.exit("\n".join(bad))
    print("ok: %s got %s once each, signed" % (path, " ".join(sorted(got))))


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode("utf-8", "replace")
        rec = {"path": self.path, "signature": self.headers.get("X-Pacer-Signature"),
               "event": self.headers.get("X-Pacer-Event"), "delivery": self.headers.get("X-Pacer-Delivery"),
               "body": body}
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def publish_port(portfile, port):
    with open(portfile + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(portfile + ".tmp", portfile)


def hang(portfile, out):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    publish_port(portfile, s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)
        first = c.recv(65536).split(b"\r\n", 1)[0].decode("ascii", "replace")
        with open(out, "a") as f:
            f.write(first + "\n")


if len(sys.argv) >= 5 and sys.argv[1] == "check":
    check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    sys.exit(0)
if len(sys.argv) == 4 and sys.argv[1] == "hang":
    hang(sys.argv[2], sys.argv[3])
srv = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
publish_port(sys.argv[1], srv.server_address[1])
srv.serve_forever()
