#!/usr/bin/env python3
"""tests/tools/openapi_check.py - checks recorded HTTP answers against docs/openapi.json.

usage: openapi_check.py OPENAPI.json INDEX

INDEX has one line per answer: METHOD TAB PATH TAB STATUS TAB CONTENT-TYPE TAB BODY-FILE
(tests/integration/http_api.sh writes it). For each answer:
  - PATH (query string dropped) matches one path template and METHOD is documented for
    it (answers 404/405 to routes that do not exist must be problem+json Problems);
  - STATUS is one the operation documents;
  - CONTENT-TYPE is one the response documents (parameters such as charset ignored);
  - a JSON body validates against the response's schema (python3-jsonschema, Debian),
    strictly: an object whose schema lists properties may carry no other field (an
    undocumented field is drift between the code and the document), and OpenAPI 3.0's
    "nullable" is honoured.
Prints one line per problem and exits 1 if there is any, else prints a count and exits 0.
"""
import copy
import json
import re
import sys

import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver: fine on Debian 12 (4.10)
import jsonschema  # noqa: E402

doc = json.load(open(sys.argv[1]))


def strict(schema):
    """OpenAPI 3.0 schema -> JSON Schema: nullable, and no undocumented properties."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    s = {k: strict(v) for k, v in schema.items()}
    nullable = s.pop("nullable", False)
    if nullable and "type" in s:
        s["type"] = [s["type"], "null"] if isinstance(s["type"], str) else s["type"] + ["null"]
    elif nullable and "allOf" in s:
        # OpenAPI 3.0's nullable reference: {"allOf": [{"$ref": ...}], "nullable": true}
        s = {"anyOf": [s, {"type": "null"}]}
    if "properties" in s and "additionalProperties" not in s:
        s["additionalProperties"] = False
    for k in ("example", "examples"):
        s.pop(k, None)
    return s


root = strict(copy.deepcopy(doc))
resolver = jsonschema.RefResolver.from_schema(root)


def deref(obj):
    while isinstance(obj, dict) and "$ref" in obj:
        ref = obj["$ref"]
        assert ref.startswith("#/"), ref
        obj = root
        for part in ref[2:].split("/"):
            obj = obj[part]
    return obj


def template_rx(tpl):
    """/api/v1/jobs/{id}/nodes -> ^/api/v1/jobs/[^/]+/nodes$; {path} spans slashes."""
    rx = "^"
    for part in re.split(r"(\{[a-z_]+\})", tpl):
        rx += ".+" if part == "{path}" else "[^/]+" if part.startswith("{") else re.escape(part)
    return re.compile(rx + "$")


templates = [(template_rx(tpl), tpl) for tpl in doc["paths"]]


def find(path):
    for rx, tpl in templates:
        if rx.match(path):
            return tpl
    return None


problem_schema = {"$ref": "#/components/schemas/Problem"}
problems, checked = [], 0
for n, line in enumerate(open(sys.argv[2]), 1):
    method, path, status, ctype, body = line.rstrip("\n").split("\t")
    where = "%s %s -> %s" % (method, path, status)
    path = path.split("?")[0]
    ctype = ctype.split(";")[0].strip().lower()
    tpl = find(path)
    op = doc["paths"][tpl].get(method.lower()) if tpl else None
    if method == "HEAD" and tpl and not op:
        op = doc["paths"][tpl].get("get")
    schema = None
    if op is None:
        if status not in ("404", "405"):
            problems.append("%s: no such operation in the document" % where)
            continue
        want = {"application/problem+json": problem_schema}
    else:
        resp = deref(op.get("responses", {}).get(status))
        if resp is None:
            problems.append("%s: status %s is not documented for %s %s" % (where, status, method, tpl))
            continue
        content = resp.get("content", {})
        want = {k.split(";")[0].strip().lower(): v.get("schema") for k, v in content.items()}
        if not want and ctype == "application/problem+json":
            want = {"application/problem+json": problem_schema}
    checked += 1
    if method == "HEAD":
        continue  # no body; its headers are checked by the test itself
    if want and ctype not in want and "*/*" not in want:
        problems.append("%s: Content-Type %s, document says %s" % (where, ctype or "(none)", " or ".join(want)))
        continue
    schema = want.get(ctype)
    if schema is None or not (ctype.endswith("json")):
        continue
    try:
        data = json.load(open(body))
    except ValueError as e:
        problems.append("%s: body is not JSON: %s" % (where, e))
        continue
    errors = sorted(jsonschema.Draft7Validator(strict(schema), resolver=resolver).iter_errors(data),
                    key=lambda e: list(e.absolute_path))
    for e in errors[:5]:
        at = "/".join(str(p) for p in e.absolute_path) or "(body)"
        problems.append("%s: %s: %s" % (where, at, e.message[:300]))

for p in problems:
    print("openapi: " + p)
if problems:
    sys.exit(1)
print("ok: %d answers conform to docs/openapi.json (status, content type, strict body schema)" % checked)
