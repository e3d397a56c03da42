# Every relative link in README.md, docs/*.md and docs/history/*.md resolves: the file it
# names exists and its #anchor is a heading there (tools/docs_links.py). The docs move
# sections between files (today's figures on top, the dated record in docs/history/), and
# a link left pointing at a section that moved is found here, not by a reader.
. tests/lib.sh
command -v python3 >/dev/null || skip "python3 not installed"

python3 tools/docs_links.py . >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "dead links in the docs"; }
cat "$TMP/out"

# The checker itself: a copy of the docs with a dead file link and a dead anchor fails,
# naming both; a good anchor with inline code and a repeated heading passes.
mkdir -p "$TMP/repo/docs/history"
cat >"$TMP/repo/README.md" <<'MD'
# Readme
See [the spec](docs/A.md#the-field-table) and [the second](docs/A.md#notes-1).
MD
cat >"$TMP/repo/docs/A.md" <<'MD'
# A
## The `field` table
## Notes
## Notes
Links: [gone](B.md), [no such heading](history/H.md#nowhere), [fine](history/H.md#dated-2026-11-26).
```
[not a link](inside/a/fence.md)
```
MD
printf '# H\n## Dated (2026-11-26)\n' >"$TMP/repo/docs/history/H.md"
python3 tools/docs_links.py "$TMP/repo" >"$TMP/out" 2>&1 && { cat "$TMP/out"; fail "the checker passed dead links"; }
grep -q '^docs/A.md:5: B.md: no such file$' "$TMP/out" &&
    grep -q '^docs/A.md:5: history/H.md#nowhere: no heading with that anchor in docs/history/H.md$' "$TMP/out" &&
    grep -q '^2 dead link(s) of 5$' "$TMP/out" || { cat "$TMP/out"; fail "the checker does not name the dead links"; }
echo "ok: a dead file link and a dead anchor are named; code fences, inline code in headings and repeated headings are read as GitHub does"

# docs/ARCHITECTURE.md's file list names every source file of the rooms and no file that
# is gone (tools/docs_files.py --check): a new file without its line fails here.
git rev-parse HEAD >/dev/null 2>&1 || skip "not a git checkout: the file list is read from HEAD"
python3 tools/docs_files.py --check docs/ARCHITECTURE.md >"$TMP/files" 2>&1 || { cat "$TMP/files"; fail "docs/ARCHITECTURE.md's file list is behind the tree"; }
echo "ok: docs/ARCHITECTURE.md's file list names every source file of the rooms"
