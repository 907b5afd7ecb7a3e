#!/bin/sh
# A debugger's backtrace through a parked operation: gdb (batch mode) stops
# the test program where an asynchronous wait on the mock that keeps its
# fiber sleeps on it (dlock__fiber_sleep: a permit semaphore's acquisition
# in the async group; most lock waits park without a fiber) and prints the
# backtrace. It must show the
# operation's frames down to the fiber's entry, none of them a frame gdb
# could not place ("??", "corrupt stack"); where the switch chains to its
# resumer (the x86-64 assembly switch, core/fiber.c), also the resume, the
# loop and main below it, all placed. (On the ucontext path glibc's
# context start is below the fiber's entry, and the trace ends there.)
#
#   sh tests/fibers/gdb_backtrace.sh BUILD/tests/dlock_tests
#
# Skipped (exit 0, with a note) when gdb is not installed.
set -u
prog=$1
if ! command -v gdb >/dev/null 2>&1; then
    echo "gdb backtrace: skipped (no gdb)"
    exit 0
fi
out=$(DLOCK_TEST_ONLY=mock DLOCK_TEST_GROUP=async DLOCK_TEST_TIMEOUT=300 \
      timeout 300 gdb -nx -batch -ex 'set pagination off' \
      -ex 'break dlock__fiber_sleep' -ex run -ex bt -ex 'print (char *)dlock__fiber_switch_name()' \
      -ex kill "$prog" 2>&1)
bt=$(printf '%s\n' "$out" | grep -E '^#[0-9]+ ')
fail() {
    printf '%s\n' "$out" | grep -E '^#|Backtrace|\$1' >&2
    echo "gdb backtrace: FAIL: $1"
    exit 1
}
printf '%s\n' "$bt" | grep -q 'dlock__fiber_sleep' || fail "never stopped in a parked wait"
printf '%s\n' "$bt" | grep -q 'fiber_entry\|trampoline' || fail "no fiber entry frame"
printf '%s\n' "$out" | grep -q 'corrupt stack' && fail "gdb found a corrupt stack"
# The frames down to the fiber's entry.
own=$(printf '%s\n' "$bt" | sed '/fiber_entry\|trampoline/q')
printf '%s\n' "$own" | grep -q ' ?? ()$' && fail "operation frames gdb could not place"
if printf '%s\n' "$out" | grep -q '"x86-64 assembly"'; then
    printf '%s\n' "$bt" | grep -q ' ?? ()$' && fail "frames below the switch gdb could not place"
    printf '%s\n' "$bt" | grep -q 'dlock__fiber_resume' || fail "no resume below the fiber"
    printf '%s\n' "$bt" | grep -q ' main ()' || fail "no main below the fiber"
    echo "gdb backtrace: ok ($(printf '%s\n' "$bt" | wc -l) frames, through the switch down to main)"
else
    echo "gdb backtrace: ok ($(printf '%s\n' "$own" | wc -l) frames down to the fiber's first frame, where the ucontext path's trace ends)"
fi
