#!/bin/sh
# The ABI check's own test (make abi-check runs it first): tiny libraries
# built twice, the second time with one planted change each, compared by
# check.sh; each verdict must be the one expected. Needs cc and abidw.
#   selftest.sh WORKDIR
set -u
dir=$1
here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failed=0

# build NAME SONAME SOURCE: lib NAME built from SOURCE, its ABI in NAME.abi
build() {
    mkdir -p "$dir/$1/inc"
    printf '%s\n' "$3" > "$dir/$1/inc/t.h"
    printf '#include "t.h"\n%s\n' "$4" > "$dir/$1/t.c"
    cc -g -shared -fPIC -I"$dir/$1/inc" -Wl,-soname,"$2" -o "$dir/$1/libt.so" "$dir/$1/t.c" &&
        abidw --headers-dir "$dir/$1/inc" --drop-private-types --no-corpus-path \
            --no-show-locs --out-file "$dir/$1/libt.abi" "$dir/$1/libt.so"
}

# expect NAME VERDICT (0 pass, 1 fail): check.sh on base against NAME
expect() {
    mkdir -p "$dir/cmp-$1"
    cp "$dir/$1/libt.abi" "$dir/cmp-$1/libt.abi"
    sh "$here/check.sh" "$dir/base" "$dir/cmp-$1" libt > "$dir/$1.out" 2>&1
    got=$?
    if [ "$got" -ne "$2" ]; then
        echo "abi selftest: $1: check.sh said $got, expected $2:"
        cat "$dir/$1.out"
        failed=1
    fi
}

H='struct t_s { int a; int b; }; int t_f(struct t_s *s);'
C='int t_f(struct t_s *s) { return s->a + s->b; }'
build base libt.so.0 "$H" "$C" || exit 1
mkdir -p "$dir/base-dir" && cp "$dir/base/libt.abi" "$dir/base-dir/libt.abi"
rm -f "$dir/base/libt.so"
mv "$dir/base" "$dir/base-build" && mv "$dir/base-dir" "$dir/base"

build same libt.so.0 "$H" "$C" || exit 1
build added libt.so.0 "$H int t_g(void);" "$C int t_g(void) { return 1; }" || exit 1
build member libt.so.0 'struct t_s { int a; int z; int b; }; int t_f(struct t_s *s);' "$C" || exit 1
build removed libt.so.0 'struct t_s { int a; int b; }; int t_h(struct t_s *s);' \
    'int t_h(struct t_s *s) { return s->a; }' || exit 1
build bumped libt.so.1 'struct t_s { int a; int z; int b; }; int t_f(struct t_s *s);' "$C" || exit 1

expect same 0
expect added 0
expect member 1
expect removed 1
expect bumped 0
if [ $failed -eq 0 ]; then
    echo "abi selftest: 5 planted cases judged as expected (same, added: pass; member inserted, function removed: fail; soname bumped: pass)"
fi
exit $failed
