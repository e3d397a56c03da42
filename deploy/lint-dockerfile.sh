#!/bin/sh
# deploy/lint-dockerfile.sh [DOCKERFILE...] - checks Dockerfiles (default deploy/Dockerfile)
# against the rules below; prints FILE:LINE: RULE: message for each finding and exits 1
# if there is any. hadolint is not packaged for Debian 12 (npm's "hadolint" is only a
# wrapper around its binary) and `docker build --check` needs an engine, so these are
# the rules we care about, written out (ids after hadolint's where one matches):
#
#   DL3006/DL3007 pinned-base   every FROM names a tag that is not "latest" (or a digest),
#                               also through a build argument's default
#   DL3009 apt-lists            a RUN that runs apt-get install (or deploy/install-deps.sh)
#                               removes /var/lib/apt/lists in the same RUN
#   DL3015 no-recommends        apt-get install has --no-install-recommends
#   DL3014 apt-yes              apt-get install has -y
#   apt-update-alone            no RUN with apt-get update and no install (a stale cache layer)
#   DL3005 no-upgrade           no apt-get upgrade / dist-upgrade
#   DL3004 no-sudo              no sudo
#   DL3020 add-url              no ADD of a URL (use curl with a checksum, or COPY)
#   DL4006 pipe-to-shell        no `curl ... | sh`
#   DL3002 user                 the final stage has a USER, and it is not root
#   healthcheck                 the final stage has a HEALTHCHECK
#   DL3025 exec-form            ENTRYPOINT and CMD in JSON (exec) form
#   DL4000 maintainer           no MAINTAINER
#   secret-env                  no ENV/ARG that sets a *PASSWORD*, *SECRET* or *TOKEN*
#   DL3003 cd                   no `cd` in RUN (use WORKDIR)
set -eu
[ $# -gt 0 ] || set -- "$(dirname "$0")/Dockerfile"
status=0
for f in "$@"; do
    [ -f "$f" ] || { echo "$f: no such file"; status=1; continue; }
    # Join continuation lines (keeping the first line's number), drop comments and blank
    # lines, then judge instruction by instruction.
    awk -v file="$f" '
    function report(line, rule, msg) { printf "%s:%d: %s: %s\n", file, line, rule, msg; bad = 1 }
    function judge(n, text,   ins, rest, img, tag, name, v) {
        ins = toupper(text); sub(/[ \t].*/, "", ins)
        rest = text; sub(/^[^ \t]+[ \t]*/, "", rest)
        if (ins == "ARG") {
            name = rest; sub(/=.*/, "", name)
            v = ""; if (index(rest, "=")) { v = rest; sub(/^[^=]*=/, "", v); gsub(/"/, "", v) }
            if (!stage) global[name] = v
            if (toupper(name) ~ /PASSWORD|SECRET|TOKEN/ && v != "") report(n, "secret-env", "ARG " name " has a default value")
        } else if (ins == "FROM") {
            stages++; stage = 1; user = ""; health = 0
            img = rest; sub(/^--platform=[^ \t]+[ \t]+/, "", img); sub(/[ \t].*/, "", img)
            alias = rest; if (match(alias, /[ \t][aA][sS][ \t]+[^ \t]+/)) { alias = substr(alias, RSTART, RLENGTH); sub(/^[ \t][aA][sS][ \t]+/, "", alias); known[alias] = 1 }
            if (img ~ /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/) {
                name = img; gsub(/[${}]/, "", name)
                if (!(name in global) || global[name] == "") { report(n, "pinned-base", "FROM " img ": no default for " name); return }
                img = global[name]
            }
            if (img in known || img == "scratch") return
            if (img ~ /@sha256:/) return
            tag = img; if (!sub(/^.*:/, "", tag) || tag ~ /\//) tag = ""
            if (tag == "") report(n, "pinned-base", "FROM " img " has no tag")
            else if (tag == "latest") report(n, "pinned-base", "FROM " img ": latest is not a pin")
        } else if (ins == "RUN") {
            if (rest ~ /apt-get[ \t]+(-[^ \t]+[ \t]+)*install/) {
                if (rest !~ /--no-install-recommends/) report(n, "no-recommends", "apt-get install without --no-install-recommends")
                if (rest !~ /(^|[ \t])(-y|--yes|--assume-yes|-[a-z]*y[a-z]*)([ \t]|$)/) report(n, "apt-yes", "apt-get install without -y")
            }
            if ((rest ~ /apt-get[ \t]+(-[^ \t]+[ \t]+)*install/ || rest ~ /install-deps\.sh/) && rest !~ /rm -rf[^;&|]*\/var\/lib\/apt\/lists/)
                report(n, "apt-lists", "installs packages but does not rm -rf /var/lib/apt/lists in the same RUN")
            if (rest ~ /apt-get[ \t]+(-[^ \t]+[ \t]+)*update/ && rest !~ /apt-get[ \t]+(-[^ \t]+[ \t]+)*install/ && rest !~ /install-deps\.sh/)
                report(n, "apt-update-alone", "apt-get update without an install in the same RUN")
            if (rest ~ /apt-get[ \t]+(-[^ \t]+[ \t]+)*(dist-)?upgrade/) report(n, "no-upgrade", "apt-get upgrade: pin the base image instead")
            if (rest ~ /(^|[ \t;&|])sudo[ \t]/) report(n, "no-sudo", "sudo in RUN (use USER)")
            if (rest ~ /(curl|wget)[^|]*\|[ \t]*(ba|da|z)?sh([ \t]|$)/) report(n, "pipe-to-shell", "a download piped into a shell")
            if (rest ~ /(^|[ \t;&|(])cd[ \t]/) report(n, "cd", "cd in RUN (use WORKDIR)")
        } else if (ins == "ADD") {
            if (rest ~ /(https?|ftp):\/\//) report(n, "add-url", "ADD of a URL")
        } else if (ins == "USER") {
            user = rest; sub(/[ \t:].*/, "", user)
        } else if (ins == "HEALTHCHECK") {
            health = (toupper(rest) !~ /^NONE/)
        } else if (ins == "ENTRYPOINT" || ins == "CMD") {
            if (rest !~ /^\[/) report(n, "exec-form", ins " in shell form (use JSON: signals reach the process)")
        } else if (ins == "MAINTAINER") {
            report(n, "maintainer", "MAINTAINER is deprecated (use a LABEL)")
        } else if (ins == "ENV") {
            v = " " rest
            if (toupper(v) ~ /[ \t][A-Z_]*(PASSWORD|SECRET|TOKEN)[A-Z_]*[= \t]/) report(n, "secret-env", "ENV sets a secret: pass it at run time")
        }
    }
    {
        line = $0
        if (cont == "") { if (line ~ /^[ \t]*#/ || line ~ /^[ \t]*$/) next; start = NR }
        else if (line ~ /^[ \t]*#/) next
        if (line ~ /\\[ \t]*$/) { sub(/\\[ \t]*$/, "", line); cont = cont line " "; next }
        judge(start, cont line); cont = ""
    }
    END {
        if (cont != "") judge(start, cont)
        if (!stages) report(1, "from", "no FROM")
        else {
            if (user == "" ) report(NR, "user", "the final stage has no USER (it would run as root)")
            else if (user == "root" || user == "0") report(NR, "user", "the final stage runs as root")
            if (!health) report(NR, "healthcheck", "the final stage has no HEALTHCHECK")
        }
        exit bad
    }' "$f" || status=1
done
[ $status -eq 0 ] && echo "lint-dockerfile: $* clean"
exit $status
