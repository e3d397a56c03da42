# tests/tools/generate_stub.py PORTFILE OUT - a stand-in for the coordinator's POST
# /api/v1/jobs/{id}/generate (docs/openapi.json), for tests/integration/generate_callers.sh:
# it checks what `pacer generate` and client.generate send, not generation itself.
# Listens on a free port of 127.0.0.1 (written to PORTFILE), appends each request as one
# JSON line {"method", "path", "auth", "content_type", "body"} to OUT, and answers like
# the endpoint: job "nosuch" is a 404, max_tokens over 1024 a 400 naming the field, else
# a 200 {"text", "tokens", "prompt_tokens", "tokens_per_s", "prompt_truncated"} whose text
# is the prompt followed by " and more". Asked for text/event-stream (and the job's id not
# starting with "whole"), that text comes as "token" events of one character each
# {"text"}, then a "done" event with the answer; job "broken" sends one token and then an
# "error" event {"error"} (as the endpoint does), "broken-problem" one with a problem detail, job "cut" ends after its tokens without "done", and
# job "slow" waits after its first token until the file OUT.go exists.
import http.server, json, os, sys, time


def problem(status, title, detail, field=None):
    p = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    if field:
        p["field"] = field
    return status, p


def answer(path, req):
    parts = path.split("/")
    if len(parts) != 6 or parts[:4] != ["", "api", "v1", "jobs"] or parts[5] != "generate":
        return problem(404, "Not Found", "no route for %s" % path)
    if parts[4] == "nosuch":
        return problem(404, "Not Found", "job nosuch not found")
    if not isinstance(req, dict) or not isinstance(req.get("prompt"), str):
        return problem(400, "Bad Request", "prompt: must be a string", "prompt")
    n = req.get("max_tokens", 16)
    if not isinstance(n, int) or n < 1 or n > 1024:
        return problem(400, "Bad Request", "max_tokens: must be a whole number from 1 to 1024", "max_tokens")
    prompt = req["prompt"]
    return 200, {"text": prompt + " and more", "tokens": n, "prompt_tokens": len(prompt.encode()),
                 "tokens_per_s": 250.0, "prompt_truncated": len(prompt.encode()) > 64}


class Stub(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw)
        except ValueError:
            req = None
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"method": "POST", "path": self.path, "auth": self.headers.get("Authorization"),
                                "content_type": self.headers.get("Content-Type"), "body": req}) + "\n")
        status, doc = answer(self.path, req)
        job = self.path.split("/")[4] if self.path.count("/") >= 4 else ""
        if status == 200 and "text/event-stream" in self.headers.get("Accept", "") and not job.startswith("whole"):
            return self.stream(job, doc)
        out = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if status == 200 else "application/problem+json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def event(self, kind, doc):
        self.wfile.write(("event: %s\ndata: %s\n\n" % (kind, json.dumps(doc))).encode())
        self.wfile.flush()

    def stream(self, job, doc):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, ch in enumerate(doc["text"]):
            self.event("token", {"text": ch})
            if job == "broken":  # the endpoint's words: {"error": MESSAGE}
                return self.event("error", {"error": "the generation process exited: killed at its memory limit"})
            if job == "broken-problem":
                return self.event("error", problem(500, "Generation failed", "the generation process timed out")[1])
            if job == "slow" and i == 0:
                while not os.path.exists(sys.argv[2] + ".go"):
                    time.sleep(0.05)
        if job != "cut":
            self.event("done", doc)

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Stub)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
