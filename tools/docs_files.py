#!/usr/bin/env python3
"""tools/docs_files.py - docs/ARCHITECTURE.md's file list: every source file of the
product's rooms committed at HEAD (and still in the working tree) (README's rooms; tests, bench, fuzz and deploy have their
own docs), with the first sentence of its own opening comment, the header's where a
source says only "see X.h". Prints Markdown; paste it under "Files" after adding, moving
or removing a file. `--check DOC` instead compares the files DOC's "## Files" section names
with those of the rooms (their sentences may differ): exit 1 naming each file missing
from the list or listed but gone, so the list cannot fall behind the tree unseen."""
import os, re, subprocess, sys

ROOMS = ['kernels/cpu', 'kernels/cuda', 'kernels/ref', 'model', 'model/onnx', 'worker', 'common',
         'coordinator', 'http', 'daemon', 'cli', 'sim', 'generate', 'tools']
EXTS = ('.c', '.h', '.cu', '.py', '.inc', '.sh')


def opening(path):
    """The first sentence of the file's opening comment, its own name left out."""
    try:
        text = open(path, encoding='utf-8', errors='replace').read(4000)
    except OSError:
        return ''
    text = re.sub(r'^#![^\n]*\n', '', text)
    m = re.match(r'\s*/\*(.*?)\*/', text, re.S) or re.match(r'\s*"""(.*?)"""', text, re.S) \
        or re.match(r'\s*((?:#[^\n]*\n)+)', text)
    if not m:
        return ''
    body = ' '.join(l.strip().lstrip('*#').strip() for l in m.group(1).split('\n'))
    body = re.sub(r'\s+', ' ', body).strip()
    body = re.sub(r'^[\w./+-]*' + re.escape(os.path.basename(path)) + r'(\s+\S+)*?\s+-\s+', '', body, count=1)
    body = body.replace('<', '&lt;')
    # the first sentence (a '.' or ';' outside brackets), a long one cut at a word
    depth, end = 0, len(body)
    for i, c in enumerate(body):
        depth += (c in '([') - (c in ')]')
        if depth == 0 and c in '.;' and (i + 1 == len(body) or body[i + 1] == ' '):
            end = i
            break
    body = body[:end]
    return body if len(body) <= 200 else body[:body.rindex(' ', 0, 200)] + ' ...'


def room_files():
    files = subprocess.run(['git', 'ls-tree', '-r', '--name-only', 'HEAD'], capture_output=True, text=True,
                           check=True).stdout.split()
    files = [f for f in files if os.path.isfile(f)]
    return {room: sorted(f for f in files if os.path.dirname(f) == room and f.endswith(EXTS)) for room in ROOMS}


def listed_files(doc):
    """The paths DOC's "## Files" section names: each `name` under its **room/** line."""
    text = open(doc, encoding='utf-8').read()
    m = re.search(r'^## Files\n(.*?)(?=^## )', text, re.S | re.M)
    if not m:
        return None
    paths, room = set(), None
    for line in m.group(1).split('\n'):
        r = re.match(r'\*\*(\S+)/\*\*$', line)
        if r:
            room = r.group(1)
        elif room and line.startswith('- '):
            head = line[2:].split(': ', 1)[0]
            paths.update('%s/%s' % (room, n) for n in re.findall(r'`([^`]+)`', head))
    return paths


def check(doc):
    listed = listed_files(doc)
    if listed is None:
        print('%s: no "## Files" section' % doc)
        return 1
    real = {f for group in room_files().values() for f in group}
    bad = ['%s: not in %s\'s file list' % (f, doc) for f in sorted(real - listed)]
    bad += ['%s: listed in %s but not in the tree' % (f, doc) for f in sorted(listed - real)]
    for b in bad:
        print(b)
    if bad:
        print('rerun python3 tools/docs_files.py and paste its output under "## Files"')
    return 1 if bad else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--check':
        sys.exit(check(sys.argv[2]))
    out = []
    for room, mine in room_files().items():
        if not mine:
            continue
        out.append('**%s/**' % room)
        out.append('')
        stems = {}
        for f in mine:
            stems.setdefault(os.path.splitext(f)[0], []).append(f)
        for stem, group in stems.items():
            names = ', '.join('`%s`' % os.path.basename(g) for g in group)
            words = ''
            for g in sorted(group, key=lambda g: not g.endswith('.h')):
                words = opening(g)
                if words and not re.match(r'(?i)see \S+\.h$', words):
                    break
            out.append('- %s%s' % (names, (': ' + words) if words else ''))
        out.append('')
    sys.stdout.write('\n'.join(out))


if __name__ == '__main__':
    main()
