#!/usr/bin/env python3
"""tools/code_shape.py - the shape of the rooms (long functions, circles of calls and of
includes), as commands anyone can rerun.

  python3 tools/code_shape.py functions [N] [FILES...]
      the N (20) longest C functions: lines from a definition's first line at column 0 to
      its closing brace at column 0 (the house style: clang-format puts both there), over
      the given files or every tracked .c file outside tests/, fuzz/ and bench/.
  python3 tools/code_shape.py circles OBJDIR
      the largest strongly connected component of the "calls a function defined in" graph
      between the object files of OBJDIR (e.g. build/obj/worker): an edge a -> b when a's
      undefined symbols (nm U) include one of b's defined global symbols (nm T, D, R, B, C:
      a function, or a table such as an algorithm's ops, read through a pointer). A component
      of one file is no circle. Tarjan's algorithm, iterative.
  python3 tools/code_shape.py includes FOLDER
      the largest circle of #include "x.h" between the modules of FOLDER (x.c and x.h
      together, e.g. worker): a header per file and includes that point one way make none.
      Then every circle (strongly connected component of more than one module), largest
      first, each with the includes that make it ("a.c -> b.h").
  python3 tools/code_shape.py headers FOLDER
      the largest circle of #include "x.h" between the headers of FOLDER alone (x.h -> y.h
      when x.h includes y.h), e.g. coordinator: an object header that includes its parts'
      headers, none of which includes it back.

Reads only; prints plain text. Owned by nobody in particular: docs/ARCHITECTURE.md quotes
its numbers, so rerun it when the rooms change."""
import os
import re
import subprocess
import sys

DEF = re.compile(r"^(?:static\s+|inline\s+|__attribute__\(\(.*?\)\)\s+)*[A-Za-z_][\w\s\*]*?\b(\w+)\s*\([^;]*$")


def tracked_c():
    out = subprocess.run(["git", "ls-files", "*.c"], capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if not f.startswith(("tests/", "fuzz/", "bench/"))]


def functions(n, files):
    rows = []
    for path in files or tracked_c():
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        start, name = None, None
        for i, line in enumerate(lines):
            if start is None:
                m = DEF.match(line)
                if m and not line.startswith(("typedef", "struct", "enum", "#")):
                    # the body opens at column 0 within the next few lines
                    for j in range(i, min(i + 8, len(lines))):
                        if lines[j] == "{":
                            start, name = i, m.group(1)
                            break
                        if lines[j].endswith(";"):
                            break
            elif line == "}":
                rows.append((i - start + 1, path, name, start + 1))
                start = None
    rows.sort(key=lambda r: (-r[0], r[1], r[3]))
    for length, path, name, line in rows[:n]:
        print(f"{length:5d}  {path}:{line}  {name}")


def circles(objdir):
    objs = sorted(f for f in os.listdir(objdir) if f.endswith(".o"))
    defined, undefined = {}, {}
    for o in objs:
        out = subprocess.run(["nm", os.path.join(objdir, o)], capture_output=True, text=True, check=True).stdout
        d, u = set(), set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[-2] == "U":
                u.add(parts[-1])
            elif len(parts) == 3 and parts[1] in ("T", "D", "R", "B", "C"):
                d.add(parts[2])
        defined[o], undefined[o] = d, u
    owner = {s: o for o in objs for s in defined[o]}
    edges = {o: sorted({owner[s] for s in undefined[o] if s in owner and owner[s] != o}) for o in objs}
    big = largest_scc(objs, edges)
    print(f"{len(objs)} object files; largest strongly connected component: {len(big)} file(s)")
    if len(big) > 1:
        print("  " + " ".join(big))


def largest_scc(nodes, edges):
    """The largest strongly connected component of the graph (edges: node -> sorted list),
    sorted."""
    comps = sccs(nodes, edges)
    return comps[0] if comps else []


def sccs(nodes, edges):
    """Every strongly connected component of the graph (edges: node -> sorted list), each
    sorted, largest first (then by name); Tarjan's algorithm, iterative."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            if k < len(edges[v]):
                work.append((v, k + 1))
                w = edges[v][k]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    comps.sort(key=lambda c: (-len(c), c))
    return comps


INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+)\.h"', re.M)


def includes(folder):
    """The circles of includes between the modules of folder: a module is x.c and x.h
    together, with an edge x -> y when either includes y.h of the same folder."""
    names = sorted(f for f in os.listdir(folder) if f.endswith((".c", ".h")))
    mods = sorted({n[:-2] for n in names})
    # an include names a module of folder only when folder has that header: x.c's
    # #include "users.h" is common/users.h when folder holds users.c but no users.h
    hdrs = {n[:-2] for n in names if n.endswith(".h")}
    edges = {m: set() for m in mods}
    why = {m: [] for m in mods}
    for n in names:
        with open(os.path.join(folder, n), encoding="utf-8", errors="replace") as f:
            for inc in INCLUDE.findall(f.read()):
                if inc in hdrs and inc != n[:-2]:
                    edges[n[:-2]].add(inc)
                    why[n[:-2]].append((n, inc))
    comps = sccs(mods, {m: sorted(e) for m, e in edges.items()})
    big = comps[0] if comps else []
    print(f"{len(mods)} modules; largest circle of includes: {len(big)} module(s)")
    for comp in comps:
        if len(comp) < 2:
            break
        print(f"  circle of {len(comp)}: " + " ".join(comp))
        for m in comp:
            for n, inc in why[m]:
                if inc in comp:
                    print(f"    {n} -> {inc}.h")


def headers(folder):
    """The largest circle of includes between the headers of folder."""
    names = sorted(f[:-2] for f in os.listdir(folder) if f.endswith(".h"))
    edges = {}
    for n in names:
        with open(os.path.join(folder, n + ".h"), encoding="utf-8", errors="replace") as f:
            edges[n] = sorted({i for i in INCLUDE.findall(f.read()) if i in names and i != n})
    big = largest_scc(names, edges)
    print(f"{len(names)} headers; largest circle of includes: {len(big)} header(s)")
    if len(big) > 1:
        print("  " + " ".join(big))


def main(argv):
    if len(argv) >= 2 and argv[1] == "functions":
        rest = argv[2:]
        n = int(rest.pop(0)) if rest and rest[0].isdigit() else 20
        functions(n, rest)
    elif len(argv) == 3 and argv[1] == "circles":
        circles(argv[2])
    elif len(argv) == 3 and argv[1] == "includes":
        includes(argv[2])
    elif len(argv) == 3 and argv[1] == "headers":
        headers(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
