"""The client and its jobs. One HTTP request per call (urllib), JSON in and out; every
answer that is not a success becomes a PacerError carrying the API's problem detail
(RFC 9457: type, title, detail, field), so a refused spec or model says what is wrong."""
import copy
import fnmatch
import hashlib
import io
import ipaddress
import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings

# Terminal states of docs/openapi.json's JobState: wait() returns on one of these.
FINAL_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")

# The catalog's name rule (common/catalog.h, catalog_name_valid): letters, digits, '.',
# '_' and '-', at most 63 characters.
_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]")
_NAME_MAX = 63


class PacerError(Exception):
    """A request the coordinator refused (status >= 400) or could not be reached, or a
    module torch could not export.

    status is the HTTP status (None when there was no answer), problem the parsed
    problem detail (a dict, possibly empty)."""

    def __init__(self, message, status=None, problem=None):
        super().__init__(message)
        self.status = status
        self.problem = problem or {}


# What to do about an operator the coordinator refused (422 model-unsupported): a short
# table for the operators people meet first, keyed by ONNX op_type; anything else gets
# _HINT_OTHER. "update pacer" rows are operators newer versions of pacer train, so a
# refusal naming one comes from a coordinator (and workers) older than that.
_HINT_UPDATE = "supported by newer versions of pacer: update pacer (coordinator and workers) to a version that has it"
_HINT_TRANSFORMER = ("pacer trains it since its transformer operators: update pacer (coordinator and workers) "
                     "to a version that has it")
_HINT_OTHER = ("not supported: replace the module that exports it by one pacer trains (`pacer-worker --list-ops` "
               "lists them), "
               "or, for a layer that only matters in training (e.g. a random one), export it in inference form")
_OPERATOR_HINTS = {
    "Clip": "ReLU6 and Hardtanh export as Clip, " + _HINT_UPDATE,
    "HardSigmoid": "Hardsigmoid exports as HardSigmoid, " + _HINT_UPDATE,
    "HardSwish": "Hardswish exports as HardSwish (opset 14), " + _HINT_UPDATE,
    "Mul": "SiLU, hard-swish and squeeze-excitation export as Mul, " + _HINT_UPDATE,
    "ReduceMean": "x.mean([2, 3]) exports as ReduceMean, " + _HINT_UPDATE,
    "LayerNormalization": "LayerNorm: " + _HINT_TRANSFORMER,
    "Softmax": "Softmax inside the network (attention): " + _HINT_TRANSFORMER,
    "MatMul": "MatMul of two activations (attention): " + _HINT_TRANSFORMER,
    "Erf": "GELU exports as Erf: " + _HINT_TRANSFORMER,
    "Bernoulli": ("stochastic depth or a random mask: this client exports torchvision's StochasticDepth "
                  "as pacer's own operator; for another random layer, " + _HINT_OTHER),
}
# The importer's words for an operator it does not know (model/onnx_import.c, do_node):
# "node 'NAME': operator OP is not supported (`pacer-worker --list-ops` lists ...)".
_UNSUPPORTED_OP = re.compile(r"operator (\S+) is not supported")


def _refusal_hint(detail):
    """(operator, what to do) for a 422 refusal's detail that names an operator pacer does
    not know, else None. A refusal of one form of a known operator (an attribute, a
    constant operand) names the operator in parentheses and already says what is wrong."""
    m = _UNSUPPORTED_OP.search(detail or "")
    if not m:
        return None
    op = m.group(1)
    return op, _OPERATOR_HINTS.get(op, _HINT_OTHER)


def _model_name(module, onnx_bytes):
    """A catalog name for an uploaded module: its class name and the first 12 hex digits
    of the file's sha256, so a changed module never replaces a model a running job uses."""
    base = _NAME_BAD.sub("_", type(module).__name__.lower()) or "model"
    return "%s-%s" % (base[:_NAME_MAX - 13], hashlib.sha256(onnx_bytes).hexdigest()[:12])


def _tied_names(state):
    """{name: [the other names of the same tensor]} for the tensors of a state_dict that
    appear under several names (tied weights: nanoGPT's and GPT-2's lm_head.weight is
    transformer.wte.weight). torch.onnx writes such a tensor once, under one of them."""
    by_storage = {}
    for name, t in state.items():
        if t.numel() > 0:
            key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)
            by_storage.setdefault(key, []).append(name)
    return {n: [m for m in names if m != n] for names in by_storage.values() if len(names) > 1 for n in names}


def _initializer_names(onnx_bytes, state):
    """{state_dict key: the ONNX file's initializer of that tensor} for the keys the file
    holds: under the key itself (torch.onnx keeps parameter names), a tied tensor under
    one of its other keys (_tied_names), or else the one initializer of the same shape and
    values whose name is no key (an exporter's own name), if exactly one is."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load_from_string(onnx_bytes).graph.initializer}
    aliases = _tied_names(state)
    out = {}
    for key, t in state.items():
        known = [k for k in [key] + aliases.get(key, []) if k in inits]
        if known:
            out[key] = known[0]
            continue
        a = t.detach().cpu().numpy()
        same = [n for n, x in inits.items() if n not in state and x.shape == a.shape and x.dtype == a.dtype
                and np.array_equal(x, a)]
        if len(same) == 1:
            out[key] = same[0]
    return out


def _freeze_for_file(freeze, names):
    """freeze's globs (over state_dict keys) for the coordinator, which matches them against
    the file's initializer names: a glob whose keys are all initializers of their own name is
    sent as it is (one matching nothing too: the coordinator refuses it by name); one that
    matches a key held under another name is replaced by the initializer names of every key
    it matches."""
    out = []
    for g in freeze:
        if not isinstance(g, str):
            out.append(g)  # the coordinator's refusal names it
            continue
        hits = [k for k in names if fnmatch.fnmatchcase(k, g)]
        if all(names[k] == k for k in hits):
            out.append(g)
        else:
            out.extend(n for n in dict.fromkeys(names[k] for k in hits) if n not in out)
    return out


def _batch_of_two(example_input):
    """example_input with a batch of 1 repeated to 2, else as it is. Batch norm in training
    mode needs more than one value per channel (torch raises "Expected more than 1 value
    per channel when training" for a (1, C) input), and the exported graph's batch axis is
    dynamic, so the example's batch size is not part of the model. A tuple of inputs is
    handled element by element."""
    import torch

    if isinstance(example_input, tuple):
        return tuple(_batch_of_two(x) for x in example_input)
    if isinstance(example_input, torch.Tensor) and example_input.dim() >= 1 and example_input.shape[0] == 1:
        return torch.cat([example_input, example_input])
    return example_input


def _stochastic_depth_for_export(net):
    """Replaces, in net (the export's copy), every torchvision.ops.StochasticDepth by a module
    whose export is pacer's own operator ai.pacer:StochasticDepth (attributes p and mode),
    and returns how many. torch 1.13 cannot export its Bernoulli draw in training form
    (EfficientNet, ConvNeXt, Swin), and dropping the draw would train another network:
    pacer applies it instead (LAYER_STOCHASTIC_DEPTH: one draw per sample from the job's
    seed and the step, the identity at evaluation). mode "batch" is written as it is and
    refused by the coordinator, naming it. Modules are matched by class name and their p
    and mode attributes, so torchvision itself need not be importable."""
    import torch

    class _Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, p, mode):
            return x.clone()  # the trace's value; the exported node is symbolic's

        @staticmethod
        def symbolic(g, x, p, mode):
            out = g.op("ai.pacer::StochasticDepth", x, p_f=float(p), mode_s=mode)
            out.setType(x.type())  # the input's shape: torch cannot infer a custom operator's
            return out

    class _PacerStochasticDepth(torch.nn.Module):
        def __init__(self, p, mode):
            super().__init__()
            self.p, self.mode = float(p), str(mode)

        def forward(self, x):
            return _Fn.apply(x, self.p, self.mode)

    count = 0
    for parent in list(net.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__ == "StochasticDepth" and hasattr(child, "p") and hasattr(child, "mode"):
                setattr(parent, name, _PacerStochasticDepth(child.p, child.mode))
                count += 1
    return count


def export_module(module, example_input):
    """The module as ONNX bytes, exported as pacer wants it for training: training mode
    (batch norm and dropout kept as nodes, not folded into the convolutions), no constant
    folding, the batch axis dynamic, opset 13. Initializer names are the module's
    state_dict keys. A copy is exported: tracing in training mode would otherwise move the
    caller's batch-norm running statistics. An example batch of 1 is exported as a batch
    of 2 (_batch_of_two). torch's warnings about the trace (TracerWarning, the removed
    num_batches_tracked update, ...) are silenced: they describe this export mode, not
    something the caller can change; an export that fails raises PacerError naming the
    module and torch's error. torchvision's StochasticDepth modules are exported as pacer's
    own operator (_stochastic_depth_for_export), so that it still applies while training."""
    import torch

    net = copy.deepcopy(module).train()
    custom = {"ai.pacer": 1} if _stochastic_depth_for_export(net) else None
    buf = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, _batch_of_two(example_input), buf, opset_version=13, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                              output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                              custom_opsets=custom)
    except Exception as e:
        raise PacerError("exporting %s to ONNX failed: %s: %s" % (type(module).__name__, type(e).__name__, e)) from e
    if custom:
        return _fix_output_shape(buf.getvalue(), net, example_input)
    return buf.getvalue()


def _fix_output_shape(onnx_bytes, net, example_input):
    """The file with the logits' shape the module gives: torch's shape inference stops at
    a custom operator, which leaves the number of classes symbolic, and pacer needs it
    fixed. The net is the export's copy (its running statistics may move)."""
    import onnx
    import torch

    with torch.no_grad():
        out = net.eval()(_batch_of_two(example_input))
    model = onnx.load_from_string(onnx_bytes)
    dims = model.graph.output[0].type.tensor_type.shape.dim
    for i in range(1, min(len(dims), out.dim())):
        dims[i].Clear()
        dims[i].dim_value = out.shape[i]
    return model.SerializeToString()


def _host_is_loopback(host):
    """localhost, 127.0.0.0/8 or ::1, decided from the text (nothing is resolved): the
    same rule as the pacer CLI's (cli/cliargs.c) and the coordinator's (http/auth.c)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The coordinator answers without redirects; following one would carry the token's
    header to wherever a Location points. A 3xx is returned as the error it is."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class GenerateStream:
    """The answer of Client.generate(..., stream=True): an iterator over the generated
    text, one str per token as its server-sent "token" event arrives (a character cut
    between tokens comes with its last byte). Once the stream has ended, result is the
    answer as stream=False returns it ({"text", "tokens", "prompt_tokens", ...}) and text
    the pieces joined. An "error" event, or a stream that ends before its "done" event,
    raises PacerError after the pieces that came before it. A coordinator that answers
    with the whole JSON instead gives its text as one piece. A context manager; close()
    (or leaving the loop early) drops the connection, which stops the generation."""

    _EVENT_MAX = 2 << 20  # bytes of one event: the endpoint's lines are at most 1 MiB

    def __init__(self, response, what):
        self._resp, self._what = response, what
        self.result = None
        self._pieces = []

    @property
    def text(self):
        return "".join(self._pieces)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._resp.close()

    def __iter__(self):
        try:
            if not self._resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                self.result = json.loads(self._resp.read(self._EVENT_MAX))
                self._pieces.append(self.result.get("text", ""))
                yield self._pieces[-1]
                return
            for kind, data in self._events():
                try:
                    doc = json.loads(data)
                except ValueError:
                    raise PacerError("%s: a %s event whose data is not JSON: %.80r" % (self._what, kind, data)) from None
                if kind == "token":
                    self._pieces.append(doc.get("text", ""))
                    yield self._pieces[-1]
                elif kind == "done":
                    doc.pop("done", None)
                    self.result = doc
                    return
                elif kind == "error":
                    why = doc.get("error") or "%s: %s" % (doc.get("title", "error"), doc.get("detail", ""))
                    raise PacerError("%s: generation failed: %s" % (self._what, why), doc.get("status"),
                                     doc if "detail" in doc else None)
            raise PacerError('%s: the stream ended before its answer (no "done" event)' % self._what)
        finally:
            self.close()

    def _events(self):
        """(event, data) of each event of the stream as it arrives (the WHATWG rules: data
        lines joined by newlines, comments skipped, an event without a name "message")."""
        kind, data, size = None, [], 0
        while True:
            raw = self._resp.readline(self._EVENT_MAX + 1)
            if not raw:
                return
            size += len(raw)
            if size > self._EVENT_MAX:
                raise PacerError("%s: an event of over %d bytes" % (self._what, self._EVENT_MAX))
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                if data:
                    yield kind or "message", "\n".join(data)
                kind, data, size = None, [], 0
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                kind = value
            elif field == "data":
                data.append(value)


class Client:
    """A coordinator at url (e.g. "http://127.0.0.1:8080", "https://pacer.example:8443");
    token is a user's token (from `pacer user add`) or the daemon's own (sent as
    "Authorization: Bearer"), None for a daemon that needs none. What the token may do is
    its role's: a refusal raises PacerError with status 403 and the rule in its
    message.

    https: the coordinator's certificate is verified against the CA certificate(s) in
    the PEM file cafile (one's own CA, or the self-signed certificate itself), else the
    system's; verification is never turned off. A token is not sent over plain http:// to
    a host that is not loopback (anyone on the way could read it): the constructor raises
    PacerError naming the rule, unless allow_insecure_token=True says it is meant."""

    def __init__(self, url, token=None, timeout=60.0, cafile=None, allow_insecure_token=False):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PacerError("url %r must be http://HOST[:PORT] or https://HOST[:PORT]" % url)
        if token and parts.scheme == "http" and not allow_insecure_token and not _host_is_loopback(parts.hostname):
            raise PacerError("refusing to send the API token in clear text to %s: plain http:// carries it readable "
                             "to anyone on the way, and %r is not a loopback address. Use an https:// URL "
                             "(cafile= for a private CA), or allow it explicitly with allow_insecure_token=True"
                             % (self.url, parts.hostname))
        handlers = [_NoRedirect()]
        self.cafile = cafile
        if parts.scheme == "https":
            try:
                ctx = ssl.create_default_context(cafile=cafile)
            except (OSError, ssl.SSLError) as e:
                raise PacerError("cafile %s: %s" % (cafile, e)) from None
            handlers.append(urllib.request.HTTPSHandler(context=ctx))
        self._opener = urllib.request.build_opener(*handlers)

    def request(self, method, path, body=None, content_type=None, accept="application/json"):
        """Sends one request; returns (status, headers, body bytes) of a success, raises
        PacerError with the problem detail otherwise."""
        with self._open(method, path, body, content_type, accept) as r:
            return r.status, r.headers, r.read()

    def _open(self, method, path, body=None, content_type=None, accept="application/json"):
        """Sends one request; returns the open response of a success (the caller reads and
        closes it: a stream is read as it comes), raises PacerError otherwise."""
        req = urllib.request.Request(self.url + path, data=body, method=method)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        if content_type:
            req.add_header("Content-Type", content_type)
        req.add_header("Accept", accept)
        try:
            return self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                problem = json.loads(raw)
            except ValueError:
                problem = {}
            what = problem.get("detail") or problem.get("title") or raw.decode("utf-8", "replace").strip()
            raise PacerError("%s %s: %d %s" % (method, path, e.code, what), e.code, problem) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, ssl.SSLCertVerificationError):
                hint = ("its certificate is not signed by the CA in cafile=%s, or names another host" % self.cafile
                        if self.cafile else "give its CA with cafile=")
                raise PacerError("%s %s: cannot verify the coordinator at %s: %s (%s)"
                                 % (method, path, self.url, e.reason, hint)) from None
            raise PacerError("%s %s: %s unreachable: %s" % (method, path, self.url, e.reason)) from None

    def _json(self, method, path, obj=None):
        body = None if obj is None else json.dumps(obj).encode()
        _, _, raw = self.request(method, path, body, "application/json" if body is not None else None)
        return json.loads(raw) if raw else None

    # ---- models ---------------------------------------------------------------------
    def models(self):
        """The catalog's models, built-in and uploaded (GET /api/v1/models)."""
        return self._json("GET", "/api/v1/models")

    def upload_model(self, name, onnx_bytes):
        """Uploads ONNX bytes under name (PUT /api/v1/models/{name}); returns the model's
        summary (input, classes, parameters, flops_per_sample, sha256, ...). A model pacer
        cannot train raises PacerError naming the operator and node; when the operator is
        one pacer does not know, the message ends with what to do about it (_OPERATOR_HINTS:
        update pacer, not yet, or replace the module)."""
        return self._upload(name, onnx_bytes)[1]

    def _upload(self, name, onnx_bytes):
        """upload_model's (status, summary): 201 when the name is new, 200 when it held a
        model before (these bytes or others)."""
        path = "/api/v1/models/" + urllib.parse.quote(name, safe="")
        try:
            status, _, raw = self.request("PUT", path, onnx_bytes, "application/octet-stream")
        except PacerError as e:
            hint = _refusal_hint(e.problem.get("detail")) if e.status == 422 else None
            if hint is None:
                raise
            raise PacerError("%s [%s: %s]" % (e, hint[0], hint[1]), e.status, e.problem) from None
        return status, json.loads(raw)

    def delete_model(self, name):
        self.request("DELETE", "/api/v1/models/" + urllib.parse.quote(name, safe=""))

    # ---- users ------------------------------------------------------------
    def whoami(self):
        """{"name", "role", "auth", ...}: who this client's token is."""
        return self._json("GET", "/api/v1/whoami")

    def users(self):
        """Every user (admins only)."""
        return self._json("GET", "/api/v1/users")["users"]

    def add_user(self, name, role, expires_in_s=None):
        """Creates a user (admins only); returns its record with "token", shown this once."""
        body = {"name": name, "role": role}
        if expires_in_s is not None:
            body["expires_in_s"] = expires_in_s
        return self._json("POST", "/api/v1/users", body)

    def remove_user(self, name):
        self.request("DELETE", "/api/v1/users/" + urllib.parse.quote(name, safe=""))

    def new_token(self):
        """Replaces this client's token with a new one (the old one stops working) and
        uses it from now on; returns it."""
        self.token = self._json("POST", "/api/v1/token")["token"]
        return self.token

    # ---- jobs -----------------------------------------------------------------------
    def submit(self, spec):
        """Submits a job spec (docs/JOB_SPEC.md) as it is; returns its Job."""
        info = self._json("POST", "/api/v1/jobs", spec)
        return Job(self, info["id"], info)

    def job(self, job_id):
        return Job(self, job_id)

    def generate(self, job, prompt, max_tokens=None, temperature=None, top_k=None, seed=None, checkpoint=None,
                 stream=False, precision=None):
        """Text from a language model job's weights (POST /api/v1/jobs/{id}/generate):
        job is a Job or its id, prompt the text to continue. The options are sent only
        when given, so the coordinator's defaults and bounds apply (a value it refuses
        raises PacerError with status 400 naming the field); temperature 0 is greedy, and
        the same seed gives the same text. checkpoint is "latest", "best" or a
        checkpoint's name; precision "fp32" or "bf16" (the job's own by default). Returns the answer: {"text", "tokens", "prompt_tokens",
        "tokens_per_s", ...} ("prompt_truncated" says the prompt was cut to the model's
        last block_size tokens).

        stream=True asks for server-sent events and returns a GenerateStream at once (a
        refusal still raises here): iterating it yields each token's text as it arrives,
        and its result is then the same answer:

            for piece in client.generate(job, "Once", stream=True):
                print(piece, end="", flush=True)"""
        job_id = job.id if isinstance(job, Job) else job
        if not isinstance(job_id, str) or not job_id:
            raise PacerError("generate: job must be a Job or a job id, not %r" % (job,))
        if not isinstance(prompt, str):
            raise PacerError("generate: prompt must be a str, not %s" % type(prompt).__name__)
        req = {"prompt": prompt}
        for name, value, kinds in (("max_tokens", max_tokens, (int,)), ("temperature", temperature, (int, float)),
                                   ("top_k", top_k, (int,)), ("seed", seed, (int,)),
                                   ("checkpoint", checkpoint, (str,)), ("precision", precision, (str,))):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise PacerError("generate: %s must be %s, not %r" % (name, "a str" if kinds == (str,) else
                                                                       "a number" if float in kinds else
                                                                       "an int", value))
            req[name] = value
        path = "/api/v1/jobs/%s/generate" % urllib.parse.quote(job_id, safe="")
        if not stream:
            return self._json("POST", path, req)
        return GenerateStream(self._open("POST", path, json.dumps(req).encode(), "application/json",
                                         "text/event-stream"), "POST " + path)

    def train(self, module, example_input, spec, name=None):
        """Exports module (see export_module), uploads it, and submits spec with its
        "model" set to the upload; returns the Job. spec is not modified. spec's "freeze"
        globs and its "lora" "targets" name the module's own parameters (module.state_dict()'s keys): a name the
        file holds under another (a head tied to the embedding is one initializer,
        transformer.wte.weight for lm_head.weight) is sent as the file's
        (_freeze_for_file). name is the
        model's catalog name (default: the class name and a content hash). A spec the
        coordinator refuses raises PacerError with its refusal, after deleting the upload
        when this call created it (a name that held a model before is left as it is)."""
        onnx_bytes = export_module(module, example_input)
        name = name or _model_name(module, onnx_bytes)
        spec = copy.deepcopy(spec)
        lora = spec.get("lora")
        lora_targets = isinstance(lora, dict) and isinstance(lora.get("targets"), list)
        if isinstance(spec.get("freeze"), list) or lora_targets:
            names = _initializer_names(onnx_bytes, module.state_dict())
            if isinstance(spec.get("freeze"), list):
                spec["freeze"] = _freeze_for_file(spec["freeze"], names)
            if lora_targets:
                lora["targets"] = _freeze_for_file(lora["targets"], names)
        status, summary = self._upload(name, onnx_bytes)
        spec["model"] = {"onnx": name}
        try:
            job = self.submit(spec)
        except PacerError as e:
            if status != 201:
                left = "%s held a model before this upload: it stays in the catalog" % name
            else:
                try:
                    self.delete_model(name)
                    left = "the model %s uploaded for it was deleted" % name
                except PacerError as d:
                    left = "the model %s uploaded for it is left in the catalog: %s" % (name, d)
            raise PacerError("job refused: %s (%s)" % (e, left), e.status, e.problem) from None
        job.model = summary
        # What load_state_dict will expect back, and the buffers ONNX does not carry.
        state = module.state_dict()
        job._module_state = {k: v.detach().clone() for k, v in state.items()}
        job._module_aliases = _tied_names(state)
        return job


    def download_safetensors(self, job_id, path, names=None, dtype=None):
        """Writes job job_id's trained weights as safetensors to path (Job.safetensors:
        names="hf" for Hugging Face GPT-2's names and layout, dtype="bf16"), whole or not
        at all; returns the number of bytes written."""
        raw = Job(self, job_id).safetensors(names=names, dtype=dtype)
        part = "%s.part.%d" % (path, os.getpid())
        with open(part, "wb") as f:
            f.write(raw)
        os.replace(part, path)
        return len(raw)

    # ---- experiments: hyperparameter searches ----------------------------------------
    def submit_experiment(self, spec, search, name=None):
        """Submits an experiment (POST /api/v1/experiments): spec a job spec, search the
        search object (docs/EXPERIMENTS.md); returns its Experiment."""
        body = {"spec": spec, "search": search}
        if name is not None:
            body["name"] = name
        info = self._json("POST", "/api/v1/experiments", body)
        return Experiment(self, info["id"], info)

    def experiment(self, experiment_id):
        return Experiment(self, experiment_id).refresh_self()

    def experiments(self, limit=50):
        """The experiments, newest first (summaries)."""
        return self._json("GET", "/api/v1/experiments?limit=%d" % limit)["experiments"]

    def search(self, module, example_input, spec, search, name=None, model_name=None):
        """Like train, for a search: exports and uploads module, then submits an experiment
        whose trials train it with the search's parameters set in spec (e.g. {"method":
        "asha", "trials": 16, "space": {"optimizer.lr": {"log_uniform": [1e-3, 0.3]}}});
        returns the Experiment. A refused experiment raises PacerError with its refusal,
        after deleting the upload when this call created it."""
        onnx_bytes = export_module(module, example_input)
        model_name = model_name or _model_name(module, onnx_bytes)
        status, summary = self._upload(model_name, onnx_bytes)
        spec = copy.deepcopy(spec)
        spec["model"] = {"onnx": model_name}
        try:
            exp = self.submit_experiment(spec, search, name)
        except PacerError as e:
            if status == 201:
                try:
                    self.delete_model(model_name)
                except PacerError:
                    pass
            raise PacerError("experiment refused: %s" % e, e.status, e.problem) from None
        exp.model = summary
        return exp


class Experiment:
    """An experiment of the coordinator: id, info (its last JSON from
    GET /api/v1/experiments/{id}: state, trials, best)."""

    def __init__(self, client, experiment_id, info=None):
        self.client = client
        self.id = experiment_id
        self.info = info or {}
        self.model = None

    def _path(self):
        return "/api/v1/experiments/" + urllib.parse.quote(self.id, safe="")

    def refresh(self):
        self.info = self.client._json("GET", self._path())
        return self.info

    def refresh_self(self):
        self.refresh()
        return self

    @property
    def state(self):
        return self.info.get("state")

    @property
    def trials(self):
        return self.info.get("trials", [])

    @property
    def best(self):
        """{"trial", "job", "params", "metric", "epochs_trained"} or None."""
        return self.info.get("best")

    def cancel(self):
        self.info = self.client._json("DELETE", self._path())
        return self.info

    def wait(self, poll=2.0, timeout=None, out=sys.stdout):
        """Waits until the experiment ends, printing each trial's change of state (to out;
        None prints nothing); returns its final state. timeout raises TimeoutError."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = {}
        while True:
            self.refresh()
            for t in self.trials:
                key = (t.get("state"), t.get("rung"))
                if out is not None and seen.get(t["trial"]) != key:
                    print("experiment %s: trial %d (%s) %s, rung %s, metric %s" % (
                        self.id, t["trial"], t.get("job") or "-", t.get("state"), t.get("rung"),
                        t.get("metric")), file=out, flush=True)
                seen[t["trial"]] = key
            if self.state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                return self.state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("experiment %s still %s after %g s" % (self.id, self.state, timeout))
            time.sleep(poll)


class Job:
    """A job of the coordinator: id, info (its last JSON from GET /api/v1/jobs/{id})."""

    def __init__(self, client, job_id, info=None):
        self.client = client
        self.id = job_id
        self.info = info or {}
        self.model = None
        self._module_state = None
        self._module_aliases = {}

    def refresh(self):
        self.info = self.client._json("GET", "/api/v1/jobs/" + urllib.parse.quote(self.id, safe=""))
        return self.info

    @property
    def state(self):
        return self.info.get("state")

    def wait(self, poll=1.0, timeout=None, out=sys.stdout):
        """Waits until the job ends, printing each epoch's record as it arrives (to out;
        None prints nothing); returns the final state ("SUCCEEDED", "FAILED", "CANCELLED").
        timeout (seconds) raises TimeoutError, leaving the job running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        since, last_state = "0", None
        jid = urllib.parse.quote(self.id, safe="")
        while True:
            self.refresh()
            page = self.client._json("GET", "/api/v1/jobs/%s/metrics?since=%s&limit=1000" % (jid, since))
            for rec in page.get("items", []):
                # Every rank reports its epochs; rank 0 evaluates: show rank 0's records.
                if out is not None and rec.get("kind") in ("epoch", "eval", "final") and rec.get("rank", 0) == 0:
                    print("job %s: %s" % (self.id, _describe(rec)), file=out, flush=True)
            since = page.get("next") or since
            if out is not None and self.state != last_state:
                print("job %s: %s" % (self.id, self.state), file=out, flush=True)
                last_state = self.state
            if self.state in FINAL_STATES:
                if out is not None and self.state != "SUCCEEDED" and self.info.get("reason"):
                    print("job %s: %s" % (self.id, self.info["reason"]), file=out, flush=True)
                return self.state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("job %s still %s after %g s" % (self.id, self.state, timeout))
            time.sleep(poll)

    def generate(self, prompt, **options):
        """Client.generate for this job: text continuing prompt from its weights."""
        return self.client.generate(self, prompt, **options)

    def onnx(self):
        """The trained model as ONNX bytes (GET /api/v1/jobs/{id}/model.onnx)."""
        _, _, raw = self.client.request("GET", "/api/v1/jobs/%s/model.onnx" % urllib.parse.quote(self.id, safe=""),
                                        accept="application/octet-stream")
        return raw

    def safetensors(self, names=None, dtype=None):
        """The trained weights as safetensors bytes (GET /api/v1/jobs/{id}/model.safetensors):
        the model's own names in F32, or with names="hf" the built-in GPT under Hugging Face
        GPT-2's names and Conv1D layout, with dtype="bf16" in BF16 (docs/JOB_SPEC.md)."""
        query = urllib.parse.urlencode([(k, v) for k, v in (("names", names), ("dtype", dtype)) if v is not None])
        path = "/api/v1/jobs/%s/model.safetensors" % urllib.parse.quote(self.id, safe="")
        _, _, raw = self.client.request("GET", path + ("?" + query if query else ""),
                                        accept="application/octet-stream")
        return raw

    def state_dict(self):
        """The trained weights as torch tensors under the module's own names, ready for
        module.load_state_dict(..., strict=True): every initializer of the file, and batch
        norm's num_batches_tracked, a counter ONNX does not carry (see _batches_tracked).
        For a job made by Client.train, exactly the module's state_dict keys: a key the
        file lacks, or a shape that differs, raises PacerError; a tensor the module holds
        under several names (a head tied to the embedding) fills each of them. For another
        job (client.job), one num_batches_tracked per batch norm of the file
        (PREFIX.running_mean)."""
        import onnx
        import torch
        from onnx import numpy_helper

        model = onnx.load_from_string(self.onnx())
        weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
        steps = self._steps()
        if self._module_state is None:
            for key in [k for k in weights if k.endswith(".running_mean")]:
                tracked = key[:-len("running_mean")] + "num_batches_tracked"
                weights[tracked] = self._batches_tracked(torch.tensor(0, dtype=torch.long), steps)
            return weights
        out = {}
        for key, old in self._module_state.items():
            # A tied tensor (a language model's head reading the token embedding) is one
            # initializer of the file under one of its names: every name gets it.
            found = [k for k in [key] + self._module_aliases.get(key, []) if k in weights]
            if found:
                new = weights[found[0]]
                if tuple(new.shape) != tuple(old.shape):
                    raise PacerError("job %s: %s has shape %s in the trained model, the module's is %s"
                                     % (self.id, key, tuple(new.shape), tuple(old.shape)))
                out[key] = new.to(old.dtype)
            elif key.endswith("num_batches_tracked"):
                out[key] = self._batches_tracked(old, steps)
            else:
                raise PacerError("job %s: the trained model has no tensor %s" % (self.id, key))
        return out

    def _steps(self):
        """The job's training steps (its summary's "steps": global steps, or the parameter
        server's updates), None when the API does not give them."""
        steps = (self.refresh().get("summary") or {}).get("steps")
        return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else None

    @staticmethod
    def _batches_tracked(before, steps):
        """A batch norm's num_batches_tracked after the job: the count it had when the
        module was uploaded plus the job's steps (each step one training batch through
        every batch norm, as torch counts a replica's), or that count unchanged when the
        job's steps are not known."""
        if steps is None:
            return before.clone()
        return before + steps


def _describe(rec):
    """One line of a metrics record: what was measured, nothing for what was not."""
    parts = ["final"] if rec.get("kind") == "final" else []
    if rec.get("epoch") is not None:
        parts.append("epoch %s" % rec["epoch"])
    if rec.get("loss") is not None:
        parts.append("loss %.4f" % rec["loss"])
    if rec.get("test_accuracy") is not None:
        parts.append("test accuracy %.4f" % rec["test_accuracy"])
    if rec.get("train_s") is not None:
        parts.append("%.1f s" % rec["train_s"])
    return ", ".join(parts) or rec.get("kind", "record")
