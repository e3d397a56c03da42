#!/usr/bin/env python3
"""tools/docs_links.py [ROOT] - every relative link in README.md, docs/*.md and
docs/history/*.md under ROOT (default: the repository) must name a file that exists, and
a link with #anchor a heading of the Markdown file it names (GitHub's anchors: the
heading's text lower-cased, punctuation dropped, spaces as hyphens, -1, -2 ... for
repeats). Prints one line per dead link (FILE:LINE: LINK: why) and exits 1 if any, else
prints how many links it checked and exits 0. Links inside code (fences, `spans`) are
not links; http(s) and mailto links are left to the reader."""
import os, re, sys

LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')


def slug(text):
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = re.sub(r'[^\w\- ]', '', text.strip().lower())
    return text.replace(' ', '-')


def prose_lines(path):
    """(line number, text) of each line outside code fences, inline code removed."""
    fence = False
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith('```'):
                fence = not fence
                continue
            if not fence:
                yield n, re.sub(r'`[^`]*`', '', line)


def check(root):
    docs = [os.path.join(root, 'README.md')]
    for d in ('docs', os.path.join('docs', 'history')):
        full = os.path.join(root, d)
        if os.path.isdir(full):
            docs += sorted(os.path.join(full, f) for f in os.listdir(full) if f.endswith('.md'))
    dead, checked = [], 0
    for doc in docs:
        if not os.path.isfile(doc):
            continue
        for n, line in prose_lines(doc):
            for target in LINK.findall(line):
                if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                    continue
                checked += 1
                path, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                where = '%s:%d: %s' % (os.path.relpath(doc, root), n, target)
                if not os.path.exists(dest):
                    dead.append(where + ': no such file')
                elif anchor and dest.endswith('.md') and anchor not in anchors_with_code(dest):
                    dead.append(where + ': no heading with that anchor in ' + os.path.relpath(dest, root))
    return dead, checked


def anchors_with_code(path, cache={}):
    # headings are read with their inline code kept (a heading's `code` is part of its anchor)
    if path not in cache:
        seen, out, fence = {}, set(), False
        with open(path, encoding='utf-8') as f:
            for line in f:
                if line.lstrip().startswith('```'):
                    fence = not fence
                    continue
                m = None if fence else re.match(r'^#{1,6} (.*?)\s*$', line)
                if m:
                    s = slug(m.group(1))
                    k = seen.get(s, 0)
                    seen[s] = k + 1
                    out.add(s if k == 0 else '%s-%d' % (s, k))
        cache[path] = out
    return cache[path]


if __name__ == '__main__':
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    dead, checked = check(root)
    for d in dead:
        print(d)
    if dead:
        print('%d dead link(s) of %d' % (len(dead), checked))
        sys.exit(1)
    print('%d relative links, every one resolves' % checked)
