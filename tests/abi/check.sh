#!/bin/sh
# The ABI check (make abi-check, mk/abi.mk): each library's ABI, as abidw
# wrote it from this build, against the baseline kept in the tree.
#   check.sh BASELINE_DIR NEW_DIR LIB...
# Passes when nothing changed but additions (new functions, new variables),
# or when the soname changed (an incompatible release: refresh the
# baseline in the same commit). Fails, with abidiff's report, on any other
# change: a removed or changed function, a changed public type.
base=$1 new=$2
shift 2
fail=0

soname() {
    sed -n 's/.*<abi-corpus [^>]*soname=.\([^"'"'"']*\).*/\1/p' "$1" | head -n 1
}

for lib in "$@"; do
    b=$base/$lib.abi n=$new/$lib.abi
    if [ ! -f "$b" ]; then
        echo "abi-check: $lib: no baseline $b (make abi-baseline writes it)"
        fail=1
        continue
    fi
    # abidiff's status: bit 1 an error, bit 2 a usage error, bit 4 a change,
    # bit 8 an incompatible change; additions are left out of both.
    report=$(abidiff --no-added-syms "$b" "$n" 2>&1)
    rc=$?
    if [ $((rc & 3)) -ne 0 ]; then
        echo "abi-check: $lib: abidiff could not compare (status $rc):"
        echo "$report"
        fail=1
    elif [ $((rc & 12)) -eq 0 ]; then
        echo "abi-check: $lib: no change but additions against $b"
    elif [ "$(soname "$b")" != "$(soname "$n")" ]; then
        echo "abi-check: $lib: ABI changed and the soname with it" \
             "($(soname "$b") -> $(soname "$n")): refresh the baseline (make abi-baseline)"
    else
        echo "abi-check: $lib: FAIL: the ABI changed but the soname ($(soname "$n")) did not:"
        echo "$report"
        echo "abi-check: bump SOVERSION in the Makefile, or, if the change is compatible" \
             "(reviewed), refresh the baseline in the same commit (make abi-baseline)"
        fail=1
    fi
done
exit $fail
