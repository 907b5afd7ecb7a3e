#!/bin/sh
# Every wait of the library goes through core/wait.c (the waiting service:
# a fiber yields, a plain thread blocks). This check fails on a direct
# blocking call anywhere else in the library's sources, comments left out.
#
#   sh tests/waits/check.sh [folder...]   (default: core objects backends codecs)
#
# Exit 0: clean; 1: the offending lines are printed as file:line: text.
#
# The allow-list is "file call" pairs, each with why the call cannot be a
# fiber's wait. Keep it short: a new entry needs a reason that holds on
# every thread the file's code can run on.
ALLOW='
core/wait.c pthread_cond_wait
core/wait.c pthread_cond_timedwait
core/wait.c poll
core/wait.c nanosleep
objects/async/loop.c epoll_wait
backends/mock/pubsub.c pthread_cond_wait
'
# core/wait.c: the service itself.
# objects/async/loop.c epoll_wait: the loop's own poller, the thing that
#   resumes fibers; it runs on the loop's thread outside every fiber (and
#   with a zero timeout while a slice still has work).
# backends/mock/pubsub.c pthread_cond_wait: a pin (an unsubscribe waits for
#   a delivery in progress to leave its listener), which blocks as a mutex
#   would (core's dlock__wait_pin); the mock is a library of its own on the
#   public API, which has no pin.

dirs=${*:-core objects backends codecs}
calls='pthread_cond_wait|pthread_cond_timedwait|pthread_cond_clockwait|poll|ppoll|epoll_wait|epoll_pwait|select|pselect|nanosleep|clock_nanosleep|usleep|sleep'

files=$(find $dirs -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "waits check: no sources under $dirs" >&2; exit 2; }

# awk strips /* */ and // comments and string literals (keeping line
# numbers), then reports calls: a name of $calls followed by "(" and not
# preceded by an identifier character, "." or "->" (a member of a table).
out=$(awk -v calls="$calls" -v allow="$ALLOW" '
BEGIN {
    n = split(allow, a, "\n")
    for (i = 1; i <= n; i++) if (a[i] != "") ok[a[i]] = 1
    re = "(^|[^A-Za-z0-9_.>])(" calls ")[ \t]*\\("
}
FNR == 1 { incomment = 0 }
{
    line = $0; code = ""
    while (line != "") {
        if (incomment) {
            e = index(line, "*/")
            if (!e) { line = ""; break }
            line = substr(line, e + 2); incomment = 0
            continue
        }
        s = index(line, "/*"); d = index(line, "//"); q = index(line, "\"")
        first = 0
        if (s && (!first || s < first)) first = s
        if (d && (!first || d < first)) first = d
        if (q && (!first || q < first)) first = q
        if (!first) { code = code line; line = ""; break }
        code = code substr(line, 1, first - 1)
        if (first == d && first != s && first != q) { line = ""; break }
        if (first == s) { line = substr(line, s + 2); incomment = 1; continue }
        # a string literal: skipped up to its closing quote
        line = substr(line, q + 1)
        while (match(line, /^([^"\\]|\\.)*"/)) { line = substr(line, RLENGTH + 1); break }
    }
    rest = code
    while (match(rest, re)) {
        hit = substr(rest, RSTART, RLENGTH)
        sub(/^[^A-Za-z_]/, "", hit); sub(/[ \t]*\($/, "", hit)
        if (!((FILENAME " " hit) in ok))
            printf "%s:%d: %s (use core/wait.h)\n", FILENAME, FNR, hit
        rest = substr(rest, RSTART + RLENGTH)
    }
}' $files)

if [ -n "$out" ]; then
    echo "$out"
    echo "waits check: FAIL: a blocking call outside core/wait.c (a fiber would block the loop's thread); wait through core/wait.h or justify it in tests/waits/check.sh's allow-list" >&2
    exit 1
fi
echo "waits check: ok ($(echo "$files" | wc -l) files)"
