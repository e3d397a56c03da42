# tests/webhook_receiver.py PORTFILE OUT - a webhook receiver for tests/integration/webhooks.sh:
# listens on a free port of 127.0.0.1 (written to PORTFILE), appends each POST as one JSON
# line {"path", "signature", "event", "delivery", "body"} to OUT and answers 204.
import http.server, json, sys

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

srv = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
