#!/bin/sh
# Issue 32 §2's figure: the time from kill -9 of a queued fair-lock waiter
# (a `dlock run --fair` process) to the next waiter's acquisition, on a
# real Redis, RUNS times (default 10); prints every time, the median and
# the max. The waiter timeout is the client's default (5000 ms) unless the
# URL says otherwise (?fair_waiter_timeout_ms=N).
#   DLOCK_URL=redis://127.0.0.1:6379 sh tests/bench/fair_dead_waiter.sh [build/dlock]
# The conformance case dead_dlock_waiter_goes_quickly (tests/conformance/
# fair_cases.c) prints the same figure on the mock (exact, virtual clock)
# and on Redis (a waiter that stops reaching the server).
set -eu
D=${1:-build/dlock}
RUNS=${RUNS:-10}
: "${DLOCK_URL:?set DLOCK_URL to a Redis server}"
export DLOCK_URL
out=$(mktemp)
got=$(mktemp)
trap 'rm -f "$out" "$got"' EXIT
i=0
while [ "$i" -lt "$RUNS" ]; do
    i=$((i + 1))
    name="bench:fair-dead:$$:$i"
    "$D" run --fair --lease 30s "$name" -- sleep 2 & holder=$!
    sleep 0.3
    "$D" run --fair --wait 60s "$name" -- true & doomed=$!
    sleep 0.5
    "$D" run --fair --wait 30s "$name" -- sh -c "date +%s%3N > $got" & next=$!
    sleep 0.3
    kill -9 "$doomed"
    killed=$(date +%s%3N)
    wait "$next"
    wait "$holder"
    wait "$doomed" 2>/dev/null || true
    echo $(($(cat "$got") - killed)) >> "$out"
done
echo "kill -9 -> next acquisition (ms): $(sort -n "$out" | tr '\n' ' ')"
sort -n "$out" | awk '{a[NR] = $1} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
    printf "median %s ms, max %s ms (%d runs)\n", m, a[NR], NR}'
