#!/bin/sh
# `make install-check` (also run by `make check`): install as a user would,
# then build tests/install/consumer.c outside the tree from the installed
# headers and dlock.pc only, linked to the shared library and statically.
#
#  1. make install PREFIX=<tmp>/prefix: dlock.pc is rebuilt for that prefix;
#     bin/dlock, share/man/man1/dlock.1 and the shells' completion scripts
#     (share/bash-completion/completions/dlock, share/zsh/site-functions/
#     _dlock) are installed;
#     make install DESTDIR=<tmp>/stage PREFIX=/usr LIBDIR=/usr/lib/<x>:
#     libdir follows LIBDIR; ldconfig runs only for a system prefix without
#     DESTDIR (LDCONFIG=false would fail the install if it ran here; `make
#     -n` shows it for PREFIX=/usr).
#  2. `pkg-config --cflags dlock` is -I<includedir> plus jansson's cflags:
#     nothing of the private packages; libdlock.so needs no Lua (the mock
#     store is libdlock-mock, dlock-mock.pc), and a program linked to
#     libdlock alone knows no "mock:" URL.
#  3. the shared build (on the mock: dlock-mock.pc) runs with
#     LD_LIBRARY_PATH and needs libdlock.so.1 and libdlock-mock.so.1;
#     samples/custom_lock.c (a lock type of one's own, from the installed
#     sys/ headers) builds and runs the same way;
#     the static build (the README's command) runs without it and
#     does not need libdlock.so (readelf -d, ldd).
#  3b. the conformance kit (libdlock_conformance.a, dlock/conformance.h):
#     tests/install/conformance_consumer.c, built from the installed files
#     against the shared library, runs it on the reentrant lock (mock).
#  3c. the README's virtual-clock example, as printed, builds from the
#     installed files and runs; no README line asserts a dlock_ call (with
#     -DNDEBUG the call would vanish).
#  3d. the CMake package (lib/cmake/dlock/): tests/install/CMakeLists.txt,
#     a user's project (find_package(dlock 1.0 CONFIG REQUIRED)), builds
#     consumer.c with dlock::dlock (needs libdlock.so.1) and with
#     dlock::dlock_static (does not), and consumer.cpp (<dlock.hpp>, C++17)
#     with dlock::dlock; all three run. find_package(dlock 1.1), (dlock 2.0)
#     and (dlock 0.9) are refused by dlockConfigVersion.cmake. The
#     README's C++ example compiles against the installed <dlock.hpp>.
#  4. libdlock.so exports exactly the functions the installed headers
#     declare (gcc -aux-info lists them) but <dlock/mock.h>'s, and
#     libdlock-mock.so exactly those: no dlock__ internals, none missing.
#  5. the dlock tool and its man page: bin/dlock runs from the install
#     (it links libdlock statically: no LD_LIBRARY_PATH) and says the
#     version; BINDIR and MANDIR are followed;
#  6. make uninstall leaves no file or link behind.
#
# Environment (from the Makefile): MAKE, CC, SANITIZE, BUILD, VERSION,
# SOVERSION. Prints one PASS or FAIL line; exit status 0 or 1.
set -u
MAKE=${MAKE:-make}
CC=${CC:-cc}
SANITIZE=${SANITIZE:-}
src=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dlock-install-check.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log

fail() {
    echo "install-check: FAIL: $*"
    exit 1
}
run() { # run CMD...: quiet unless it fails
    "$@" >"$log" 2>&1 || { cat "$log"; fail "$*"; }
}

# ---- 1. installing -------------------------------------------------------
p=$tmp/prefix
run $MAKE --no-print-directory install PREFIX="$p" LDCONFIG=false
pc=$p/lib/pkgconfig/dlock.pc
[ -f "$pc" ] || fail "no $pc"
grep -qx "prefix=$p" "$pc" || fail "$pc is not for PREFIX=$p: $(grep '^prefix=' "$pc")"
for f in lib/libdlock.a "lib/libdlock.so.$VERSION" "lib/libdlock.so.$SOVERSION" \
         lib/libdlock.so include/dlock.h include/dlock/export.h \
         lib/libdlock-mock.a "lib/libdlock-mock.so.$VERSION" "lib/libdlock-mock.so.$SOVERSION" \
         lib/libdlock-mock.so lib/pkgconfig/dlock-mock.pc \
         include/dlock/sys/backend.h include/dlock.hpp bin/dlock share/man/man1/dlock.1 \
         share/bash-completion/completions/dlock share/zsh/site-functions/_dlock \
         lib/cmake/dlock/dlockConfig.cmake lib/cmake/dlock/dlockConfigVersion.cmake; do
    [ -e "$p/$f" ] || fail "make install did not install $f"
done

stage=$tmp/stage
run $MAKE --no-print-directory install DESTDIR="$stage" PREFIX=/usr \
    LIBDIR=/usr/lib/dlock-check BINDIR=/usr/sbin-check MANDIR=/usr/man-check \
    LDCONFIG=false
grep -qx 'prefix=/usr' "$stage/usr/lib/dlock-check/pkgconfig/dlock.pc" ||
    fail "DESTDIR install: dlock.pc is not for PREFIX=/usr"
grep -qx 'libdir=${prefix}/lib/dlock-check' "$stage/usr/lib/dlock-check/pkgconfig/dlock.pc" ||
    fail "DESTDIR install: dlock.pc's libdir does not follow LIBDIR"
[ -e "$stage/usr/lib/dlock-check/libdlock.so.$SOVERSION" ] || fail "LIBDIR ignored"
[ -x "$stage/usr/sbin-check/dlock" ] || fail "BINDIR ignored"
[ -e "$stage/usr/man-check/man1/dlock.1" ] || fail "MANDIR ignored"
grep -q '"/usr/lib/dlock-check/libdlock.so.'"$VERSION"'"' \
    "$stage/usr/lib/dlock-check/cmake/dlock/dlockConfig.cmake" ||
    fail "DESTDIR install: dlockConfig.cmake does not name LIBDIR's libdlock.so"

$MAKE --no-print-directory -n install PREFIX=/usr LDCONFIG=ldconfig-runs-here \
    2>&1 | grep -qx 'ldconfig-runs-here' ||
    fail "make install PREFIX=/usr would not run ldconfig"
$MAKE --no-print-directory -n install PREFIX=/usr DESTDIR="$stage" \
    LDCONFIG=ldconfig-runs-here 2>&1 | grep -q 'ldconfig-runs-here' &&
    fail "make install DESTDIR=... would run ldconfig"

# ---- 2. what a consumer's flags are ----------------------------------------
PKG_CONFIG_PATH=$p/lib/pkgconfig
export PKG_CONFIG_PATH
cflags=$(pkg-config --cflags dlock) || fail "pkg-config --cflags dlock"
want=$(echo -I"$p/include" $(pkg-config --cflags jansson))
[ "$(echo $cflags)" = "$want" ] ||
    fail "pkg-config --cflags dlock gives '$cflags', expected '$want'"
libs=$(pkg-config --libs dlock)
case " $libs " in *" -ljansson "*) ;; *) fail "--libs lacks -ljansson: $libs" ;; esac
case " $libs " in *" -lhiredis "*) fail "--libs names a private library: $libs" ;; esac
case " $(pkg-config --libs --static dlock) " in *lua*) fail "dlock.pc names Lua" ;; esac
readelf -d "$p/lib/libdlock.so" | grep -qi 'NEEDED.*lua' &&
    fail "libdlock.so needs Lua: $(readelf -d "$p/lib/libdlock.so" | grep NEEDED)"
readelf -d "$p/lib/libdlock-mock.so" | grep -q "NEEDED.*\[libdlock\.so\.$SOVERSION\]" ||
    fail "libdlock-mock.so does not need libdlock.so.$SOVERSION"

# ---- 3. building and running the consumer ---------------------------------
app=$tmp/app
mkdir "$app" && cp "$src/tests/install/consumer.c" "$src/samples/custom_lock.c" "$app/" ||
    fail "cannot copy"
cd "$app" || fail "cd $app"

# a lock type of one's own (samples/custom_lock.c), from the installed
# <dlock/sys/...> headers only, run on the mock (make check runs it on
# Redis too)
run $CC $SANITIZE -std=c99 -o custom_lock custom_lock.c $(pkg-config --cflags --libs dlock-mock) -lpthread
LD_LIBRARY_PATH=$p/lib ./custom_lock >"$log" 2>&1 || { cat "$log"; fail "samples/custom_lock.c built from the installed files failed"; }
grep -q "^custom_lock: ok" "$log" || { cat "$log"; fail "samples/custom_lock.c's output"; }

# libdlock alone: "mock:" is an unknown scheme (EINVAL), and nothing of
# the mock is linked
printf '%s\n' '#include <dlock.h>' '#include <string.h>' 'int main(void)' '{' \
    '    dlock_client *c = NULL; char err[256] = "";' \
    '    int rc = dlock_client_connect(&c, "mock:", NULL, err, sizeof err);' \
    '    return rc == DLOCK_EINVAL && strstr(err, "unknown URL scheme") ? 0 : 1;' '}' >no_mock.c
run $CC $SANITIZE -std=c99 -o no_mock no_mock.c $(pkg-config --cflags --libs dlock)
LD_LIBRARY_PATH=$p/lib ./no_mock || fail "linked to libdlock alone, \"mock:\" is not refused"
readelf -d no_mock | grep -q 'libdlock-mock' && fail "linked to libdlock alone, it needs libdlock-mock"

# shared: what the README says
run $CC $SANITIZE -std=c99 -o consumer_shared consumer.c $(pkg-config --cflags --libs dlock-mock)
LD_LIBRARY_PATH=$p/lib ./consumer_shared >"$log" 2>&1 || { cat "$log"; fail "the shared build failed"; }
grep -q "dlock $VERSION: " "$log" || { cat "$log"; fail "the shared build's output"; }
readelf -d consumer_shared | grep -q "NEEDED.*\[libdlock\.so\.$SOVERSION\]" ||
    fail "the shared build does not need libdlock.so.$SOVERSION"
readelf -d consumer_shared | grep -q "NEEDED.*\[libdlock-mock\.so\.$SOVERSION\]" ||
    fail "the shared build does not need libdlock-mock.so.$SOVERSION"
# --as-needed, and nothing named from the mock: dlock-mock.pc keeps it
run $CC $SANITIZE -std=c99 -o consumer_as_needed consumer.c -Wl,--as-needed \
    $(pkg-config --cflags --libs dlock-mock)
LD_LIBRARY_PATH=$p/lib ./consumer_as_needed >"$log" 2>&1 || { cat "$log"; fail "the --as-needed build failed"; }
LD_LIBRARY_PATH=$p/lib ldd ./consumer_shared | grep -q "libdlock\.so\.$SOVERSION => $p/lib/" ||
    fail "the shared build does not load $p/lib/libdlock.so.$SOVERSION"

# static: the README's command, word for word
run $CC $SANITIZE -std=c99 -o consumer_static consumer.c $(pkg-config --cflags dlock) \
    $(pkg-config --variable=static_libs dlock-mock) \
    "$(pkg-config --variable=libdir dlock)/libdlock.a" \
    -Wl,--as-needed $(pkg-config --libs --static dlock)
./consumer_static >"$log" 2>&1 || { cat "$log"; fail "the static build failed"; }
grep -q "dlock $VERSION: " "$log" || { cat "$log"; fail "the static build's output"; }
readelf -d consumer_static | grep -q 'libdlock' &&
    fail "the static build needs libdlock.so: $(readelf -d consumer_static | grep libdlock)"
ldd ./consumer_static | grep -q 'libdlock' && fail "ldd: the static build loads libdlock"

# the conformance kit: the installed cases on the reentrant lock
[ -f "$p/lib/libdlock_conformance.a" ] && [ -f "$p/include/dlock/conformance.h" ] ||
    fail "make install did not install the conformance kit (is cmocka installed?)"
cp "$src/tests/install/conformance_consumer.c" "$app/" || fail "cannot copy"
run $CC $SANITIZE -std=c99 -o kit_consumer conformance_consumer.c \
    $(pkg-config --cflags dlock) -L"$p/lib" -ldlock_conformance \
    $(pkg-config --libs dlock-mock) -lcmocka -lpthread
LD_LIBRARY_PATH=$p/lib ./kit_consumer >"$log" 2>&1 || { cat "$log"; fail "the conformance kit's run"; }
kit=$(grep '^conformance kit: ' "$log")

# the README's virtual-clock example, word for word
awk '/^## The mock and its virtual clock in your own tests/{f=1}
     f && /^```c$/{p=1; next} p && /^```$/{exit} p' "$src/README.md" >readme_vclock.c
grep -q 'test_lease_expires' readme_vclock.c || fail "README: the virtual-clock example is gone"
printf 'int main(void)\n{\n    test_lease_expires();\n    return 0;\n}\n' >>readme_vclock.c
run $CC $SANITIZE -std=c99 -o readme_vclock readme_vclock.c $(pkg-config --cflags --libs dlock-mock)
LD_LIBRARY_PATH=$p/lib ./readme_vclock >"$log" 2>&1 || { cat "$log"; fail "the README's virtual-clock example"; }
if grep -n 'assert(.*dlock_[a-z_]*(' "$src/README.md"; then
    fail "README: a dlock_ call inside assert() (it vanishes with -DNDEBUG)"
fi

# the CMake package: a CMake project of a user's, both targets and C++
if command -v cmake >/dev/null 2>&1; then
    cm=$tmp/cmake-app
    mkdir "$cm" && cp "$src/tests/install/CMakeLists.txt" "$src/tests/install/consumer.c" \
        "$src/tests/install/consumer.cpp" "$cm/" || fail "cannot copy"
    run cmake -S "$cm" -B "$cm/build" -DCMAKE_PREFIX_PATH="$p" \
        -DCMAKE_C_FLAGS="$SANITIZE" -DCMAKE_CXX_FLAGS="$SANITIZE" \
        -DCMAKE_EXE_LINKER_FLAGS="$SANITIZE"
    run cmake --build "$cm/build"
    for x in consumer_shared consumer_static consumer_cpp; do
        LD_LIBRARY_PATH=$p/lib "$cm/build/$x" >"$log" 2>&1 || { cat "$log"; fail "CMake: $x failed"; }
        grep -q "dlock $VERSION: " "$log" || { cat "$log"; fail "CMake: $x's output"; }
    done
    readelf -d "$cm/build/consumer_shared" | grep -q "NEEDED.*\[libdlock\.so\.$SOVERSION\]" ||
        fail "CMake: dlock::mock does not link libdlock.so.$SOVERSION"
    readelf -d "$cm/build/consumer_shared" | grep -q "NEEDED.*\[libdlock-mock\.so\.$SOVERSION\]" ||
        fail "CMake: dlock::mock does not link libdlock-mock.so.$SOVERSION"
    readelf -d "$cm/build/consumer_static" | grep -q 'libdlock' &&
        fail "CMake: dlock::mock_static needs libdlock.so"
    for v in 1.1 2.0 0.9; do
        mkdir "$cm/v$v" &&
        printf 'cmake_minimum_required(VERSION 3.13)\nproject(v NONE)\nfind_package(dlock %s CONFIG REQUIRED)\n' \
            "$v" >"$cm/v$v/CMakeLists.txt"
        cmake -S "$cm/v$v" -B "$cm/v$v/build" -DCMAKE_PREFIX_PATH="$p" >"$log" 2>&1 &&
            fail "CMake: find_package(dlock $v) accepted version $VERSION"
        grep -q "dlockConfig.cmake, version: $VERSION" "$log" || { cat "$log"; fail "CMake: find_package(dlock $v)'s refusal"; }
    done
    # the README's C++ example, as printed, compiles against the install
    awk '/^## C\+\+: `<dlock.hpp>`/{f=1} f && /^```cpp$/{p=1; next} p && /^```$/{exit} p' \
        "$src/README.md" >"$cm/readme_cpp.cpp"
    grep -q 'dlock::reentrant_lock' "$cm/readme_cpp.cpp" || fail "README: the C++ example is gone"
    run g++ -std=c++17 -Wall -Wextra -Werror -I"$p/include" -c -o "$cm/readme_cpp.o" "$cm/readme_cpp.cpp"
    cmake_ok="the CMake package (dlock::mock, dlock::mock_static, <dlock.hpp>)"
else
    fail "cmake is not installed (Debian's cmake package): the CMake package is untested"
fi
cd "$src" || fail "cd $src"

# ---- 4. the exported ABI ---------------------------------------------------
nm -D --defined-only "$p/lib/libdlock.so" | awk '{print $3}' | sort >"$tmp/exported"
{ echo '#include <dlock.h>'
  for h in "$p"/include/dlock/sys/*.h; do echo "#include <dlock/sys/${h##*/}>"; done; } |
    gcc -std=c99 -I"$p/include" -x c -fsyntax-only -aux-info "$tmp/aux" - ||
    fail "gcc -aux-info on the installed headers"
grep "^/\* $p/include/" "$tmp/aux" | grep -v "^/\* $p/include/dlock/mock\.h:" |
    sed -n 's/.*[ *]\(dlock_[a-z0-9_]*\) (.*/\1/p' | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "found no declarations in the installed headers"
if ! cmp -s "$tmp/exported" "$tmp/declared"; then
    diff "$tmp/declared" "$tmp/exported" | sed 's/^/  /'
    fail "libdlock.so's exports and the headers' declarations differ (< declared only, > exported only)"
fi
nexp=$(wc -l <"$tmp/exported")
nm -D --defined-only "$p/lib/libdlock-mock.so" | awk '{print $3}' | sort >"$tmp/exported_mock"
grep "^/\* $p/include/dlock/mock\.h:" "$tmp/aux" |
    sed -n 's/.*[ *]\(dlock_[a-z0-9_]*\) (.*/\1/p' | sort -u >"$tmp/declared_mock"
if ! cmp -s "$tmp/exported_mock" "$tmp/declared_mock"; then
    diff "$tmp/declared_mock" "$tmp/exported_mock" | sed 's/^/  /'
    fail "libdlock-mock.so's exports and <dlock/mock.h>'s declarations differ (< declared only, > exported only)"
fi
nexp_mock=$(wc -l <"$tmp/exported_mock")

# ---- 5. the command-line tool ---------------------------------------------
v=$(env -u LD_LIBRARY_PATH "$p/bin/dlock" --version 2>&1) ||
    fail "the installed dlock --version failed: $v"
[ "$(echo "$v" | sed -n 1p)" = "dlock $VERSION (library $VERSION)" ] || fail "dlock --version says: $v"
echo "$v" | sed -n 2p | grep -q '^built with: .*mock' || fail "dlock --version names no parts: $v"
readelf -d "$p/bin/dlock" | grep -q 'libdlock' && fail "bin/dlock needs libdlock.so"
"$p/bin/dlock" frobnicate >/dev/null 2>&1
[ $? -eq 2 ] || fail "the installed dlock: an unknown command is not exit 2"
bash -n "$p/share/bash-completion/completions/dlock" ||
    fail "the installed bash completion is not valid bash"
grep -q -- '--wait' "$p/share/bash-completion/completions/dlock" ||
    fail "the installed bash completion does not complete --wait"
if command -v man >/dev/null 2>&1; then
    MANPATH=$p/share/man man -w dlock 2>/dev/null | grep -qx "$p/share/man/man1/dlock.1" ||
        fail "man -w dlock does not find $p/share/man/man1/dlock.1"
fi

# ---- 6. uninstalling -------------------------------------------------------
run $MAKE --no-print-directory uninstall PREFIX="$p" LDCONFIG=false
run $MAKE --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr \
    LIBDIR=/usr/lib/dlock-check BINDIR=/usr/sbin-check MANDIR=/usr/man-check \
    LDCONFIG=false
left=$(find "$p" "$stage" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
[ -d "$p/include/dlock" ] && fail "make uninstall left include/dlock/"

echo "install-check: PASS (install/uninstall with PREFIX, DESTDIR, LIBDIR, BINDIR, MANDIR; shared and static builds and the README's virtual-clock example from the installed files; a custom lock type from the installed sys/ headers; $cmake_ok; $nexp + $nexp_mock exported symbols (libdlock, libdlock-mock) = the declared API; libdlock.so needs no Lua; $kit; bin/dlock and its man page)"
