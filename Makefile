# dlock — build, test and install.
#
#   make            libdlock.a, libdlock.so (soname libdlock.so.1), dlock.pc,
#                   the mock store as its own library (libdlock-mock.a,
#                   libdlock-mock.so, soname libdlock-mock.so.1, dlock-mock.pc:
#                   the only one with Lua),
#                   the CMake package (dlockConfig.cmake, dlockConfigVersion.cmake),
#                   libdlock_conformance.a (the conformance kit; with cmocka),
#                   and the command-line tool $(BUILD)/dlock (cli/, man page
#                   cli/dlock.1)
#   make check      the quick half of the suite: every lock type's cases on
#                   the mock and on a throwaway redis-server (started and
#                   stopped by the test program; tests/suites.h lists what
#                   runs), the backends' and the tool's own tests
#   make check-matrix  the rest: TLS, pooled, ACL, Sentinel and Cluster rows,
#                   the topologies' suites, hostile servers, fault cases
#   make check-all  both halves in one run
#   make check-valkey  check-all against Valkey (mk/valkey.mk)
#   make demo       the samples, on the mock backend
#   make asan       check-all under AddressSanitizer + UBSan (build-asan/)
#   make tsan       check-all under ThreadSanitizer (build-tsan/)
#   make check-fibers  the fiber, async and mock parts on the ucontext
#                   switch (build-ucontext/) and with -fcf-protection
#                   (build-cet/), gdb's backtrace through a parked
#                   operation and Valgrind's view of the switches
#                   (mk/fibers.mk)
#   make check-minimal  the minimal build (WITH_TLS=0 WITH_YAML=0, in
#                   build-minimal/) and the parts of the suite that apply
#                   to it (mk/minimal.mk)
#   make check-deb  the Debian packages (debian/) built, lintian-checked,
#                   installed and used by a sample (mk/deb.mk)
#   make check-aarch64  the same parts cross-built for aarch64 and run
#                   under qemu-user, on dlock's aarch64 switch
#                   (build-aarch64/) and on ucontext
#                   (build-aarch64-ucontext/) (mk/fibers.mk)
#   make install    PREFIX=/usr/local DESTDIR= (LIBDIR=$(PREFIX)/lib
#                   INCLUDEDIR=$(PREFIX)/include BINDIR=$(PREFIX)/bin
#                   MANDIR=$(PREFIX)/share/man BASHCOMPDIR=$(PREFIX)/share/
#                   bash-completion/completions ZSHCOMPDIR=$(PREFIX)/share/
#                   zsh/site-functions); `make uninstall` with the
#                   same variables removes exactly what it installed
#   make install-check  installs into a temporary directory and builds a
#                   program from the installed files, shared and static
#
# The test, benchmark and fuzzing halves are in mk/, included at the end:
#   mk/bench.mk     make bench (the benchmarks of tests/bench/, on a throwaway
#                   redis-server), make bench-smoke (part of make check)
#   mk/faults.mk    make faults (tests/faults/), make stress (stress-cluster,
#                   stress-redlock, stress-processes, stress-differential),
#                   make nemesis (the randomized fault run, tests/nemesis/)
#   mk/fuzz.mk      make fuzz (the libFuzzer targets of tests/fuzz/), make
#                   fuzz-smoke (their seed corpora replayed; part of make check)
#   mk/fibers.mk    make check-fibers, make check-aarch64 (the fiber
#                   switches the default build does not take)
#   mk/valkey.mk    make check-valkey (builds Valkey from ../shared/servers/
#                   into $(BUILD)/valkey once, then make check against it)

# VERSION is also in api/dlock/version.h: objects/report/version.c does not compile
# when the two disagree.
VERSION   := 1.0.0
SOVERSION := 1
PREFIX    ?= /usr/local
LIBDIR    ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# find_package(dlock CONFIG) searches <prefix>/lib/cmake/dlock/ (and
# lib/<arch>/cmake/dlock/ for a multiarch LIBDIR).
CMAKEDIR  ?= $(LIBDIR)/cmake/dlock
DESTDIR   ?=
BUILD     ?= build
# Run after installing into (or uninstalling from) a system prefix, so that
# the dynamic loader finds libdlock.so.1 at once. Not for a DESTDIR install
# (a staging tree: the package's own scripts run it) nor for another prefix
# (the loader does not search it; see README). LDCONFIG=: skips it.
LDCONFIG  ?= ldconfig
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
SYSTEM_PREFIXES := /usr /usr/local
RUN_LDCONFIG := $(if $(DESTDIR),,$(filter $(SYSTEM_PREFIXES),$(patsubst %/,%,$(PREFIX))))

CC        ?= cc
OPT       ?= -O2 -g
SANITIZE  ?=
# lua5.1-cjson and lua5.1-bitop: the cjson and bit libraries Redis embeds in
# its script environment (the mock offers them too); Debian's lua-cjson-dev
# and lua-bitop-dev, linked like lua5.1 itself. yaml-0.1: libyaml (Debian's
# libyaml-dev), the Redisson YAML configuration's parser
# (backends/redis/redisson_yaml.c).
# The optional parts (make WITH_TLS=0 WITH_YAML=0: the minimal build,
# .ci/run's `make check-minimal`): each switch picks a file, the part's own
# or its stub (backends/redis/tls_none.c, backends/redis/redisson_yaml_none.c: calls
# that need it fail with DLOCK_ENOTSUP), and drops its library;
# dlock_version_info() and `dlock --version` say which are in.
WITH_TLS  ?= 1
WITH_YAML ?= 1
# Without TLS, libcrypto stays: the Redis backend's script hashes (SHA-1).
TLS_PKGS  := $(if $(filter 1,$(WITH_TLS)),openssl,libcrypto)
YAML_PKGS := $(if $(filter 1,$(WITH_YAML)),yaml-0.1)
# libdlock needs LIB_PKGS, libdlock-mock MOCK_PKGS (Lua, and libcrypto for
# redis.sha1hex) and libdlock: a program on Redis alone carries no Lua.
LIB_PKGS  := hiredis uuid jansson $(TLS_PKGS) $(YAML_PKGS)
MOCK_PKGS := lua5.1 lua5.1-cjson lua5.1-bitop libcrypto
PKGS      := $(LIB_PKGS) $(MOCK_PKGS)
# jansson is part of the public API (json_t in codec.h, the state calls): a
# consumer's `pkg-config --cflags --libs dlock` brings it. The others are
# private: dlock.pc names their libraries in Libs.private only (for static
# links), not in Requires.private, whose cflags pkg-config would add to
# every consumer's flags (-I/usr/include/hiredis, -D_FILE_OFFSET_BITS=64...).
PUBLIC_PKGS  := jansson
PRIVATE_PKGS  = $(filter-out $(PUBLIC_PKGS),$(LIB_PKGS))
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
LIB_PKG_LIBS  := $(shell pkg-config --libs $(LIB_PKGS))
MOCK_PKG_LIBS := $(shell pkg-config --libs $(MOCK_PKGS))

WARN      := -Werror=implicit-function-declaration -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
# Hidden by default: libdlock.so exports the DLOCK_API functions of the
# public headers only (api/dlock/export.h), not the internal dlock__ ones.
CFLAGS_ALL = -std=c99 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(OPT) $(WARN) $(SANITIZE) \
             -Iapi -I. -I$(BUILD)/gen $(PKG_CFLAGS) $(CFLAGS)
# What a program of the tree (tests, samples, the tool, benchmarks) links
# after $(DLOCK_A): both libraries' dependencies; -u keeps the mock's
# registration (backends/mock/register.c) in a static link that names no
# mock function, as dlock-mock.pc does for users.
LDLIBS_ALL = -Wl,-u,dlock_mock_register $(PKG_LIBS) -lpthread $(SANITIZE) $(LDFLAGS)

SCRIPTS   := $(sort $(wildcard objects/scripts/*.lua))
FRAGMENTS := $(wildcard objects/scripts/*.luainc)
LIB_SRC   := $(sort $(wildcard core/*.c objects/runtime/*.c objects/report/*.c objects/types/*.c objects/async/*.c \
                               backends/redis/*.c codecs/*.c))
LIB_SRC   := $(filter-out $(if $(filter 1,$(WITH_TLS)),backends/redis/tls_none.c,backends/redis/tls.c) \
                          $(if $(filter 1,$(WITH_YAML)),backends/redis/redisson_yaml_none.c,backends/redis/redisson_yaml.c),$(LIB_SRC))
# One object per script (gen/scripts/<name>.c): editing a script rebuilds
# that object alone; gen/scripts.h, the declarations everyone includes,
# changes only when the set of scripts does.
SCRIPT_OBJ := $(SCRIPTS:objects/scripts/%.lua=$(BUILD)/gen/scripts/%.o)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(SCRIPT_OBJ) $(BUILD)/gen/backends.o $(BUILD)/gen/types.o
# The mock store (backends/mock/): libdlock-mock, on libdlock's public API
# (the sys headers), plus core/errbuf.c's one helper, compiled into the
# shared library too (hidden there, as in libdlock.so).
MOCK_SRC  := $(sort $(wildcard backends/mock/*.c))
MOCK_OBJ  := $(MOCK_SRC:%.c=$(BUILD)/%.o)
MOCK_SO_OBJ := $(MOCK_OBJ) $(BUILD)/core/errbuf.o
# What a program of the tree links statically: both archives, the mock's
# first (it needs libdlock).
DLOCK_A   := $(BUILD)/libdlock-mock.a $(BUILD)/libdlock.a
# Every folder of backends/ built into libdlock is a backend that registers
# its URL schemes (its register.c: dlock__backend_register_<folder>); the
# registry (core/registry.c) calls the generated list, so no code names
# them all. The mock registers itself when loaded (its own library).
BACKENDS  := $(filter-out mock,$(sort $(notdir $(patsubst %/,%,$(dir $(wildcard backends/*/register.c))))))

TEST_SRC  := $(sort $(wildcard tests/*.c tests/harness/*.c tests/conformance/*.c \
                               tests/backends/*/*.c tests/core/*.c tests/types/*.c))
# An optional part left out (WITH_TLS=0, WITH_YAML=0): its suite's file too,
# and the test program knows (tests/suites.h: DLOCK_TEST_IF_TLS).
TEST_SRC  := $(filter-out $(if $(filter 1,$(WITH_TLS)),,tests/backends/redis/tls_test.c) \
                          $(if $(filter 1,$(WITH_YAML)),,tests/backends/redis/redisson_yaml_test.c),$(TEST_SRC))
TEST_DEFS := $(if $(filter 1,$(WITH_TLS)),,-DDLOCK_TEST_NO_TLS) $(if $(filter 1,$(WITH_YAML)),,-DDLOCK_TEST_NO_YAML)
# The C++ interface's cases (api/dlock.hpp), compiled as C++17 with
# warnings as errors, in the same test program (linked with libstdc++).
TEST_CXX_SRC := $(sort $(wildcard tests/conformance/*.cpp))
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o) $(TEST_CXX_SRC:%.cpp=$(BUILD)/%.o)
$(TEST_OBJ): CFLAGS_ALL += $(TEST_DEFS)
CXXFLAGS_TEST = -std=c++17 -Wall -Wextra -Werror $(OPT) $(SANITIZE) -Iapi -I. $(CXXFLAGS)
SAMPLES   := $(patsubst samples/%.c,$(BUILD)/samples/%,$(wildcard samples/*.c))

.PHONY: all check check-all check-matrix run-suite demo asan tsan install uninstall install-check clean headers-check waits-check FORCE
CMAKE_FILES := $(BUILD)/cmake/dlockConfig.cmake $(BUILD)/cmake/dlockConfigVersion.cmake
COMPLETIONS := $(BUILD)/completion/bash/dlock $(BUILD)/completion/zsh/_dlock
all: $(BUILD)/libdlock.a $(BUILD)/libdlock.so $(BUILD)/dlock.pc $(CMAKE_FILES) $(BUILD)/dlock \
     $(COMPLETIONS) $(BUILD)/libdlock-mock.a $(BUILD)/libdlock-mock.so $(BUILD)/dlock-mock.pc

# Rewritten only when its text changes (a script added or removed).
$(BUILD)/gen/scripts.h: objects/scripts/embed.sh FORCE
	@mkdir -p $(@D)
	@sh objects/scripts/embed.sh h $(SCRIPTS) > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "  GEN $@"; fi
$(BUILD)/gen/scripts/%.c: objects/scripts/%.lua $(FRAGMENTS) objects/scripts/embed.sh
	@mkdir -p $(@D)
	sh objects/scripts/embed.sh c $< > $@

$(BUILD)/gen/backends.c: Makefile $(wildcard backends/*/register.c)
	@mkdir -p $(@D)
	@{ echo '/* generated by the Makefile: the built-in backends */'; \
	  for b in $(BACKENDS); do echo "void dlock__backend_register_$$b(void);"; done; \
	  echo 'void dlock__backends_builtin(void);'; \
	  echo 'void dlock__backends_builtin(void)'; echo '{'; \
	  for b in $(BACKENDS); do echo "    dlock__backend_register_$$b();"; done; \
	  echo '}'; } > $@

# Every file of objects/types/ that defines its descriptor,
# `const dlock__type dlock__type_<file>` (objects/types/type.h), is a
# built-in type: the generated list is what lifetime.c and names.c read,
# so no code names them all. Rewritten only when the list changes.
$(BUILD)/gen/types.c: FORCE
	@mkdir -p $(@D)
	@{ echo '/* generated by the Makefile: the built-in types */'; \
	  echo '#include "objects/types/type.h"'; \
	  for t in $(patsubst objects/types/%.c,%,$(shell grep -l '^const dlock__type dlock__type_' objects/types/*.c)); do \
	    echo "extern const dlock__type dlock__type_$$t;"; done; \
	  echo 'const dlock__type *const dlock__types_builtin[] = {'; \
	  for t in $(patsubst objects/types/%.c,%,$(shell grep -l '^const dlock__type dlock__type_' objects/types/*.c)); do \
	    echo "    &dlock__type_$$t,"; done; \
	  echo '    NULL,'; echo '};'; } > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "  GEN $@"; fi
$(BUILD)/gen/types.o: $(BUILD)/gen/types.c objects/types/type.h
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# Objects depend on the Makefile too: a change of flags (visibility,
# warnings) must rebuild them.
# gen/scripts.h comes first (order only): whoever includes it depends on
# it through the compiler's dependency files.
$(BUILD)/%.o: %.c $(wildcard api/dlock/*.h api/dlock/sys/*.h) Makefile | $(BUILD)/gen/scripts.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@
$(BUILD)/%.o: %.cpp $(wildcard api/*.hpp api/dlock/*.h) Makefile
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_TEST) -MMD -MP -c $< -o $@
$(BUILD)/gen/scripts/%.o: $(BUILD)/gen/scripts/%.c $(BUILD)/gen/scripts.h Makefile
	$(CC) $(CFLAGS_ALL) -c $< -o $@
$(BUILD)/gen/backends.o: $(BUILD)/gen/backends.c
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# Every function of the library is declared before it is defined: a
# DLOCK_API function defined where its public declaration is not seen
# would be built hidden, missing from libdlock.so (install-check fails).
$(LIB_SRC:%.c=$(BUILD)/%.o) $(MOCK_OBJ): CFLAGS_ALL += -Werror=missing-prototypes

$(BUILD)/libdlock.a: $(LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

# The conformance kit (api/dlock/conformance.h): the test program's own
# reentrant cases and fixture, as a static library for users' lock types.
# Built and installed when cmocka (its assertions and reports) is there.
KIT_OBJ := $(BUILD)/tests/kit/conformance_kit.o \
           $(BUILD)/tests/conformance/reentrant_cases.o \
           $(BUILD)/tests/harness/fixture.o $(BUILD)/tests/harness/asserts.o \
           $(BUILD)/tests/harness/lost_reply.o $(BUILD)/tests/harness/failing_backend.o \
           $(BUILD)/tests/harness/wrap_backend.o
KIT_LIB := $(if $(shell pkg-config --exists cmocka && echo yes),$(BUILD)/libdlock_conformance.a)
all: $(KIT_LIB)
$(BUILD)/libdlock_conformance.a: $(KIT_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/libdlock.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libdlock.so.$(SOVERSION) -o $@ $^ \
	  $(LIB_PKG_LIBS) -lpthread $(SANITIZE) $(LDFLAGS)

$(BUILD)/libdlock-mock.a: $(MOCK_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
# Linked to this build's libdlock.so (NEEDED libdlock.so.1); -z defs: no
# symbol left for the program to bring.
$(BUILD)/libdlock-mock.so: $(MOCK_SO_OBJ) $(BUILD)/libdlock.so
	$(CC) -shared -Wl,-soname,libdlock-mock.so.$(SOVERSION) -Wl,-z,defs -o $@ $(MOCK_SO_OBJ) \
	  $(BUILD)/libdlock.so $(MOCK_PKG_LIBS) -lpthread $(SANITIZE) $(LDFLAGS)

$(BUILD)/objects/report/version.o: CFLAGS_ALL += -DDLOCK_MAKE_VERSION_MAJOR=$(word 1,$(subst ., ,$(VERSION))) \
    -DDLOCK_MAKE_VERSION_MINOR=$(word 2,$(subst ., ,$(VERSION))) \
    -DDLOCK_MAKE_VERSION_PATCH=$(word 3,$(subst ., ,$(VERSION))) \
    -DDLOCK_WITH_TLS=$(if $(filter 1,$(WITH_TLS)),1,0) -DDLOCK_WITH_YAML=$(if $(filter 1,$(WITH_YAML)),1,0)

# dlock.pc depends on the values it records: the stamp's content is
# rewritten (and its time changes) only when one of them changes, so
# `make install PREFIX=/opt/x` never installs a dlock.pc made for another
# prefix. libdir/includedir are written relative to ${prefix} when they
# are under it (pkg-config --define-prefix can then relocate them).
PC_VALUES = $(PREFIX)|$(LIBDIR)|$(INCLUDEDIR)|$(VERSION)|$(PUBLIC_PKGS)|$(PRIVATE_PKGS)|$(MOCK_PKGS)
PC_LIBDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCLUDEDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
PC_LIBS_PRIVATE = $(strip $(shell pkg-config --libs --static $(PRIVATE_PKGS)) -lpthread)
PC_MOCK_LIBS_PRIVATE = $(strip $(shell pkg-config --libs --static $(MOCK_PKGS)) -lpthread)

$(BUILD)/dlock.pc.values: FORCE
	@mkdir -p $(@D)
	@echo '$(PC_VALUES)' > $@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/dlock.pc: dlock.pc.in $(BUILD)/dlock.pc.values
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@REQUIRES@|$(PUBLIC_PKGS)|' -e 's|@LIBS_PRIVATE@|$(PC_LIBS_PRIVATE)|' \
	    $< > $@
$(BUILD)/dlock-mock.pc: dlock-mock.pc.in $(BUILD)/dlock.pc.values
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBS_PRIVATE@|$(PC_MOCK_LIBS_PRIVATE)|' $< > $@

# The CMake package (cmake/*.in), from the same values as dlock.pc:
# dlock::dlock gets Jansson's flags and libraries (dlock.pc's Requires),
# dlock::dlock_static the archive's private libraries too (dlock.pc's
# Libs.private, and Jansson's static libraries), as CMake lists.
dlock_empty :=
dlock_space := $(dlock_empty) $(dlock_empty)
cmake_list = $(subst $(dlock_space),;,$(strip $(1)))
CM_PUBLIC_INCLUDES = $(foreach d,$(patsubst -I%,%,$(shell pkg-config --cflags-only-I $(PUBLIC_PKGS))),;$(d))
CM_PUBLIC_CFLAGS_OTHER = $(call cmake_list,$(shell pkg-config --cflags-only-other $(PUBLIC_PKGS)))
CM_PUBLIC_LIBS = $(call cmake_list,$(shell pkg-config --libs $(PUBLIC_PKGS)))
CM_STATIC_LIBS = $(call cmake_list,$(shell pkg-config --libs --static $(PUBLIC_PKGS)) $(PC_LIBS_PRIVATE))
CM_MOCK_STATIC_LIBS = $(call cmake_list,$(PC_MOCK_LIBS_PRIVATE))
CM_SIZEOF_VOID_P := $(shell echo __SIZEOF_POINTER__ | $(CC) -E -P -x c - | tr -d ' ')
$(BUILD)/cmake/%.cmake: cmake/%.cmake.in $(BUILD)/dlock.pc.values Makefile
	@mkdir -p $(@D)
	sed -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOVERSION@|$(SOVERSION)|g' \
	    -e 's|@VERSION_MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|g' \
	    -e 's|@VERSION_MINOR@|$(word 2,$(subst ., ,$(VERSION)))|g' \
	    -e 's|@SIZEOF_VOID_P@|$(CM_SIZEOF_VOID_P)|g' \
	    -e 's|@PUBLIC_INCLUDES@|$(CM_PUBLIC_INCLUDES)|g' \
	    -e 's|@PUBLIC_CFLAGS_OTHER@|$(CM_PUBLIC_CFLAGS_OTHER)|g' \
	    -e 's|@PUBLIC_LIBS@|$(CM_PUBLIC_LIBS)|g' -e 's|@STATIC_LIBS@|$(CM_STATIC_LIBS)|g' \
	    -e 's|@MOCK_STATIC_LIBS@|$(CM_MOCK_STATIC_LIBS)|g' \
	    $< > $@

# The loop adapters' tests (api/dlock/adapters/) link the real libraries;
# libevent's case is left out where its development files are missing
# (make check-aarch64: Debian's libevent-dev is one architecture at a time).
HAVE_LIBEVENT := $(shell pkg-config --exists libevent && echo yes)
LOOP_LIBS := $(shell pkg-config --libs libuv $(if $(HAVE_LIBEVENT),libevent)) -lev
$(BUILD)/tests/async_adapters_test.o: CFLAGS_ALL += $(if $(HAVE_LIBEVENT),,-DDLOCK_TEST_NO_LIBEVENT)

$(BUILD)/tests/dlock_tests: $(TEST_OBJ) $(DLOCK_A)
	$(CC) -o $@ $(TEST_OBJ) $(DLOCK_A) -lcmocka $(LOOP_LIBS) $(LDLIBS_ALL) -lstdc++

# The command-line tool (cli/): the public headers only, linked statically
# to this build's libdlock.a and libdlock-mock.a (the README's examples
# use "mock:" URLs: a try without a server), so build/dlock runs without
# installing and the installed one does not depend on where libdlock.so
# went. The cli
# tests (tests/cli_test.c) run $(BUILD)/dlock: it is built with them.
CLI_SRC := $(sort $(wildcard cli/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
$(CLI_OBJ): $(wildcard cli/*.h)
$(BUILD)/dlock: $(CLI_OBJ) $(DLOCK_A)
	$(CC) -o $@ $(CLI_OBJ) $(DLOCK_A) $(LDLIBS_ALL)
$(BUILD)/tests/dlock_tests: | $(BUILD)/dlock
# The shells' completion scripts, written by the tool from its own option
# tables (cli/completion.c), so that they follow its options.
$(BUILD)/completion/bash/dlock: $(BUILD)/dlock
	@mkdir -p $(@D)
	$(BUILD)/dlock completion bash > $@.tmp && mv $@.tmp $@
$(BUILD)/completion/zsh/_dlock: $(BUILD)/dlock
	@mkdir -p $(@D)
	$(BUILD)/dlock completion zsh > $@.tmp && mv $@.tmp $@

$(BUILD)/samples/%: samples/%.c $(DLOCK_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(DLOCK_A) $(LDLIBS_ALL)

# samples/async_lock runs on libuv where it is installed, else on dlock's
# poll mode.
HAVE_LIBUV := $(shell pkg-config --exists libuv && echo yes)
$(BUILD)/samples/async_lock: samples/async_lock.c $(DLOCK_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(if $(HAVE_LIBUV),-DDLOCK_SAMPLE_LIBUV) -o $@ $< $(DLOCK_A) \
	  $(if $(HAVE_LIBUV),$(shell pkg-config --libs libuv)) $(LDLIBS_ALL)

# install-check runs first and prints its own pass/fail line, so that the
# test program's `N passed, N failed` stays the last line; the suite runs
# even when install-check failed, and a failure of either fails `make check`.
# The suite runs samples/custom_lock (a lock type of one's own) on Redis and
# samples/cluster_lock on a cluster: they are built first and found through
# DLOCK_SAMPLES_DIR.
#
# make check is the quick half (DLOCK_TEST_SCOPE=quick, tests/main.c):
# every lock type on the mock and on a plain redis-server, the backends'
# and the tool's own tests; make check-matrix the rest (TLS, pooled, ACL,
# Sentinel and Cluster rows, the topologies' suites, hostile servers, the
# fast fault cases); make check-all both in one run.
CHECK_DEPS := $(BUILD)/tests/dlock_tests $(BUILD)/samples/custom_lock \
              $(BUILD)/samples/cluster_lock
#
# make check CASE=pattern runs only the test program's cases whose name
# matches the glob (* and ?), in the quick half's parts and rows (narrow
# them further with DLOCK_TEST_ONLY): no install, header, bench or fuzz
# check.
#
# The build and the short checks before the suite run in parallel
# (BUILD_JOBS, the machine's cores, whatever -j make check was given), and
# the suite's parts on TEST_JOBS worker processes (DLOCK_TEST_JOBS,
# tests/harness/jobs.h): most of its time is waiting (leases, timeouts,
# servers starting), so three workers on two cores finish it in well under
# half the time of one. TEST_JOBS=1: one process, the parts in order.
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS  ?= 3
CHECK_PREP := $(CHECK_DEPS) headers-check waits-check bench-smoke fuzz-smoke simulate-smoke
ifeq ($(CASE),)
check:
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) $(CHECK_PREP)
	@$(MAKE) --no-print-directory run-suite DLOCK_TEST_SCOPE=quick
else
check: $(CHECK_DEPS)
	DLOCK_TEST_CASE='$(CASE)' DLOCK_SAMPLES_DIR=$(BUILD)/samples DLOCK_TEST_SCOPE=quick \
	  $(BUILD)/tests/dlock_tests
endif

check-all:
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) $(CHECK_PREP)
	@$(MAKE) --no-print-directory run-suite DLOCK_TEST_SCOPE=

check-matrix:
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) $(CHECK_DEPS)
	@echo "$(BUILD)/tests/dlock_tests (DLOCK_TEST_SCOPE=matrix, DLOCK_TEST_JOBS=$(TEST_JOBS))"; \
	DLOCK_SAMPLES_DIR=$(BUILD)/samples DLOCK_TEST_SCOPE=matrix DLOCK_TEST_JOBS=$(TEST_JOBS) \
	  $(BUILD)/tests/dlock_tests

run-suite:
	@ic=0; $(MAKE) --no-print-directory install-check || ic=1; \
	echo "$(BUILD)/tests/dlock_tests (DLOCK_TEST_SCOPE=$(DLOCK_TEST_SCOPE), DLOCK_TEST_JOBS=$(TEST_JOBS))"; \
	DLOCK_SAMPLES_DIR=$(BUILD)/samples DLOCK_TEST_SCOPE=$(DLOCK_TEST_SCOPE) DLOCK_TEST_JOBS=$(TEST_JOBS) \
	  $(BUILD)/tests/dlock_tests || exit 1; exit $$ic

# No blocking call (a condition wait, poll, a sleep) in the library outside
# its waiting service, core/wait.c, but the few tests/waits/check.sh allows
# and says why: a loop's fiber must never block the loop's thread.
waits-check:
	@sh tests/waits/check.sh

# Every public header compiles on its own, as C99 and as C++ (<dlock.hpp>,
# the C++ interface: as C++17 with -Wshadow -pedantic) (a typedef
# after it: ISO C wants a non-empty unit, and export.h only defines); <dlock.h>
# (what applications include) pulls in neither <pthread.h> nor the method
# tables of dlock/sys/ (for people writing a backend or a lock type).
headers-check:
	@set -e; for h in $(wildcard api/*.h api/dlock/*.h api/dlock/sys/*.h); do \
	  printf '#include "%s"\ntypedef int dlock_check_nonempty;\n' $$h | \
	    $(CC) -std=c99 -Wall -Wextra -Werror -pedantic -Iapi -x c -fsyntax-only - ; \
	  echo "#include \"$$h\"" | $(CXX) -std=c++11 -Wall -Wextra -Werror -Iapi -x c++ -fsyntax-only - ; \
	done; \
	for h in $(wildcard api/dlock/adapters/*.h); do \
	  printf '#include "%s"\ntypedef int dlock_check_nonempty;\n' $$h | \
	    $(CC) -std=gnu99 -Wall -Wextra -Werror -Iapi -x c -fsyntax-only - ; \
	  echo "#include \"$$h\"" | $(CXX) -std=c++11 -Wall -Wextra -Werror -Iapi -x c++ -fsyntax-only - ; \
	done; \
	echo '#include "dlock.hpp"' | $(CXX) -std=c++17 -Wall -Wextra -Werror -Wshadow -pedantic -Iapi -x c++ -fsyntax-only - ; \
	deps=$$(echo '#include <dlock.h>' | $(CC) -std=c99 -Iapi -x c -M -MT x - ); \
	if echo "$$deps" | grep -E 'pthread\.h|dlock/sys/' ; then \
	  echo "headers-check: FAIL: <dlock.h> includes the headers above"; exit 1; fi; \
	echo "headers-check: every public header compiles alone as C99 (the loop adapters: as the GNU C99 their libraries need) and C++, <dlock.hpp> as C++17; <dlock.h> is free of <pthread.h> and dlock/sys/"

demo: $(SAMPLES)
	@set -e; for s in $(SAMPLES); do echo "== $$s"; $$s; done

# A sanitizer run takes several times a plain one: the test program's own
# hang guard (DLOCK_TEST_TIMEOUT, tests/main.c) gets two hours unless set.
SANITIZER_TIMEOUT = DLOCK_TEST_TIMEOUT=$${DLOCK_TEST_TIMEOUT:-7200}
asan:
	$(SANITIZER_TIMEOUT) $(MAKE) BUILD=build-asan OPT="-O1 -g" \
	  SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" check-all
tsan:
	$(SANITIZER_TIMEOUT) $(MAKE) BUILD=build-tsan OPT="-O1 -g" SANITIZE="-fsanitize=thread" check-all

HEADERS     := $(notdir $(wildcard api/dlock/*.h))
SYS_HEADERS := $(notdir $(wildcard api/dlock/sys/*.h))
ADAPTER_HEADERS := $(notdir $(wildcard api/dlock/adapters/*.h))
I_LIB := $(DESTDIR)$(LIBDIR)
I_INC := $(DESTDIR)$(INCLUDEDIR)
I_PC  := $(DESTDIR)$(PKGCONFIGDIR)
I_CMAKE := $(DESTDIR)$(CMAKEDIR)
I_BIN := $(DESTDIR)$(BINDIR)
I_MAN1 := $(DESTDIR)$(MANDIR)/man1
I_BASHCOMP := $(DESTDIR)$(BASHCOMPDIR)
I_ZSHCOMP := $(DESTDIR)$(ZSHCOMPDIR)

install: all
	install -d "$(I_LIB)" "$(I_PC)" "$(I_INC)/dlock/sys" "$(I_INC)/dlock/adapters"
	install -m 644 $(BUILD)/libdlock.a "$(I_LIB)/"
	$(if $(KIT_LIB),install -m 644 $(KIT_LIB) "$(I_LIB)/")
	install -m 755 $(BUILD)/libdlock.so "$(I_LIB)/libdlock.so.$(VERSION)"
	ln -sf libdlock.so.$(VERSION) "$(I_LIB)/libdlock.so.$(SOVERSION)"
	ln -sf libdlock.so.$(SOVERSION) "$(I_LIB)/libdlock.so"
	install -m 644 $(BUILD)/libdlock-mock.a "$(I_LIB)/"
	install -m 755 $(BUILD)/libdlock-mock.so "$(I_LIB)/libdlock-mock.so.$(VERSION)"
	ln -sf libdlock-mock.so.$(VERSION) "$(I_LIB)/libdlock-mock.so.$(SOVERSION)"
	ln -sf libdlock-mock.so.$(SOVERSION) "$(I_LIB)/libdlock-mock.so"
	install -m 644 api/dlock.h api/dlock.hpp "$(I_INC)/"
	install -m 644 $(addprefix api/dlock/,$(HEADERS)) "$(I_INC)/dlock/"
	install -m 644 $(addprefix api/dlock/sys/,$(SYS_HEADERS)) "$(I_INC)/dlock/sys/"
	install -m 644 $(addprefix api/dlock/adapters/,$(ADAPTER_HEADERS)) "$(I_INC)/dlock/adapters/"
	install -m 644 $(BUILD)/dlock.pc $(BUILD)/dlock-mock.pc "$(I_PC)/"
	install -d "$(I_CMAKE)"
	install -m 644 $(CMAKE_FILES) "$(I_CMAKE)/"
	install -d "$(I_BIN)" "$(I_MAN1)"
	install -m 755 $(BUILD)/dlock "$(I_BIN)/"
	install -m 644 cli/dlock.1 "$(I_MAN1)/"
	install -d "$(I_BASHCOMP)" "$(I_ZSHCOMP)"
	install -m 644 $(BUILD)/completion/bash/dlock "$(I_BASHCOMP)/dlock"
	install -m 644 $(BUILD)/completion/zsh/_dlock "$(I_ZSHCOMP)/_dlock"
ifneq ($(RUN_LDCONFIG),)
	$(LDCONFIG)
endif

# Removes what `make install` with the same variables installed: the
# libraries, the headers, dlock.pc, the CMake package, the dlock tool and
# its man page, and the include/dlock/ and cmake/dlock/ folders when nothing
# else is left in them (never the shared lib/, include/, pkgconfig/, cmake/).
uninstall:
	rm -f "$(I_LIB)/libdlock.a" "$(I_LIB)/libdlock_conformance.a" \
	      "$(I_LIB)/libdlock.so.$(VERSION)" \
	      "$(I_LIB)/libdlock.so.$(SOVERSION)" "$(I_LIB)/libdlock.so" \
	      "$(I_LIB)/libdlock-mock.a" "$(I_LIB)/libdlock-mock.so.$(VERSION)" \
	      "$(I_LIB)/libdlock-mock.so.$(SOVERSION)" "$(I_LIB)/libdlock-mock.so" \
	      "$(I_PC)/dlock-mock.pc" \
	      "$(I_INC)/dlock.h" "$(I_INC)/dlock.hpp" "$(I_PC)/dlock.pc" \
	      $(patsubst %,"$(I_CMAKE)/%",$(notdir $(CMAKE_FILES))) \
	      "$(I_BIN)/dlock" "$(I_MAN1)/dlock.1" \
	      "$(I_BASHCOMP)/dlock" "$(I_ZSHCOMP)/_dlock"
	rm -f $(HEADERS:%="$(I_INC)/dlock/%") $(SYS_HEADERS:%="$(I_INC)/dlock/sys/%") \
	      $(ADAPTER_HEADERS:%="$(I_INC)/dlock/adapters/%")
	-rmdir "$(I_INC)/dlock/sys" "$(I_INC)/dlock/adapters" "$(I_INC)/dlock" "$(I_CMAKE)" 2>/dev/null
ifneq ($(RUN_LDCONFIG),)
	$(LDCONFIG)
endif

# Installs into a temporary folder and builds a program from the installed
# headers and dlock.pc only (outside the tree), linked to the shared library
# and statically; checks what libdlock.so exports (tests/install/check.sh).
install-check: all
	@CC="$(CC)" SANITIZE="$(SANITIZE)" MAKE="$(MAKE)" BUILD="$(BUILD)" \
	  VERSION="$(VERSION)" SOVERSION="$(SOVERSION)" sh tests/install/check.sh

clean:
	rm -rf $(sort build build-asan build-tsan build-fuzz $(FIBER_BUILDS) build-minimal $(BUILD) $(FUZZ_BUILD))

# ---- the test, benchmark and fuzzing halves -----------------------------------
include mk/bench.mk mk/faults.mk mk/fuzz.mk mk/fibers.mk mk/valkey.mk mk/minimal.mk mk/deb.mk mk/sim.mk \
        mk/abi.mk

# (Not Valkey's, built in $(BUILD)/valkey by its own make: mk/valkey.mk.)
-include $(shell find $(BUILD) -path $(BUILD)/valkey -prune -o -name '*.d' -print 2>/dev/null)
