#!/usr/bin/env python3
"""tools/docs_files.py - docs/ARCHITECTURE.md's file list: every source file of the
product's rooms committed at HEAD (and still in the working tree) (README's rooms; tests, bench, fuzz and deploy have their
own docs), with the first sentence of its own opening comment, the header's where a
source says only "see X.h". Prints Markdown; paste it under "Files" after adding, moving
or removing a file."""
import os, re, subprocess, sys

ROOMS = ['kernels/cpu', 'kernels/cuda', 'kernels/ref', 'model', 'model/onnx', 'worker', 'common',
         'coordinator', 'http', 'daemon', 'cli', 'sim', 'tools']
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


def main():
    files = subprocess.run(['git', 'ls-tree', '-r', '--name-only', 'HEAD'], capture_output=True, text=True,
                           check=True).stdout.split()
    files = [f for f in files if os.path.isfile(f)]
    out = []
    for room in ROOMS:
        mine = sorted(f for f in files if os.path.dirname(f) == room and f.endswith(EXTS))
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
