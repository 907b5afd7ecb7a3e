# dlock — build, test and install.
#
#   make            libdlock.a, libdlock.so (soname libdlock.so.0), dlock.pc
#   make check      the whole suite, every case on the mock and on a throwaway
#                   redis-server (started and stopped by the test program)
#   make demo       the samples, on the mock backend
#   make bench      the benchmarks (tests/bench/), on a throwaway redis-server
#   make asan       the suite under AddressSanitizer + UBSan (build-asan/)
#   make tsan       the suite under ThreadSanitizer (build-tsan/)
#   make install    PREFIX=/usr/local DESTDIR=

VERSION   := 0.1.0
SOVERSION := 0
PREFIX    ?= /usr/local
DESTDIR   ?=
BUILD     ?= build

CC        ?= cc
OPT       ?= -O2 -g
SANITIZE  ?=
PKGS      := hiredis lua5.1 uuid jansson openssl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))

WARN      := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS_ALL = -std=c99 -D_GNU_SOURCE -fPIC $(OPT) $(WARN) $(SANITIZE) \
             -Iapi -I$(BUILD)/gen $(PKG_CFLAGS) $(CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lpthread $(SANITIZE) $(LDFLAGS)

SCRIPTS   := $(sort $(wildcard objects/scripts/*.lua))
FRAGMENTS := $(wildcard objects/scripts/*.luainc)
LIB_SRC   := $(sort $(wildcard objects/*.c backends/common/*.c \
                               backends/mock/*.c backends/redis/*.c codecs/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/scripts.o

TEST_SRC  := $(sort $(wildcard tests/*.c tests/harness/*.c tests/conformance/*.c))
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
SAMPLES   := $(patsubst samples/%.c,$(BUILD)/samples/%,$(wildcard samples/*.c))

.PHONY: all check demo asan tsan install clean headers-check
all: $(BUILD)/libdlock.a $(BUILD)/libdlock.so $(BUILD)/dlock.pc

$(BUILD)/gen/scripts.h: $(SCRIPTS) $(FRAGMENTS) objects/scripts/embed.sh
	@mkdir -p $(@D)
	sh objects/scripts/embed.sh h $(SCRIPTS) > $@
$(BUILD)/gen/scripts.c: $(SCRIPTS) $(FRAGMENTS) objects/scripts/embed.sh $(BUILD)/gen/scripts.h
	sh objects/scripts/embed.sh c $(SCRIPTS) > $@

$(BUILD)/%.o: %.c $(BUILD)/gen/scripts.h $(wildcard api/dlock/*.h api/dlock/sys/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@
$(BUILD)/gen/scripts.o: $(BUILD)/gen/scripts.c
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/libdlock.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libdlock.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libdlock.so.$(SOVERSION) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/dlock.pc: dlock.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@REQUIRES@|$(PKGS)|' $< > $@

$(BUILD)/tests/dlock_tests: $(TEST_OBJ) $(BUILD)/libdlock.a
	$(CC) -o $@ $(TEST_OBJ) $(BUILD)/libdlock.a -lcmocka $(LDLIBS_ALL)

$(BUILD)/samples/%: samples/%.c $(BUILD)/libdlock.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libdlock.a $(LDLIBS_ALL)

check: $(BUILD)/tests/dlock_tests headers-check
	$(BUILD)/tests/dlock_tests

# Every public header compiles on its own, as C99 and as C++.
headers-check:
	@set -e; for h in $(wildcard api/*.h api/dlock/*.h api/dlock/sys/*.h); do \
	  echo "#include \"$$h\"" | $(CC) -std=c99 -Wall -Wextra -Werror -pedantic -Iapi -x c -fsyntax-only - ; \
	  echo "#include \"$$h\"" | $(CXX) -std=c++11 -Wall -Wextra -Werror -Iapi -x c++ -fsyntax-only - ; \
	done; echo "headers-check: every public header compiles alone as C99 and C++"

demo: $(SAMPLES)
	@set -e; for s in $(SAMPLES); do echo "== $$s"; $$s; done

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g" \
	  SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" check
tsan:
	$(MAKE) BUILD=build-tsan OPT="-O1 -g" SANITIZE="-fsanitize=thread" check

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	           $(DESTDIR)$(PREFIX)/include/dlock/sys
	install -m 644 $(BUILD)/libdlock.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libdlock.so $(DESTDIR)$(PREFIX)/lib/libdlock.so.$(VERSION)
	ln -sf libdlock.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libdlock.so.$(SOVERSION)
	ln -sf libdlock.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libdlock.so
	install -m 644 api/dlock.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 api/dlock/*.h $(DESTDIR)$(PREFIX)/include/dlock/
	install -m 644 api/dlock/sys/*.h $(DESTDIR)$(PREFIX)/include/dlock/sys/
	install -m 644 $(BUILD)/dlock.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

clean:
	rm -rf build build-asan build-tsan

# ---- benchmarks ------------------------------------------------------------
# `make bench` builds tests/bench/ against the static library and the
# harness's redis_server.c, and runs it: the program starts its own throwaway
# redis-server, runs every figure, stops the server. Not part of `make check`;
# figures only print (the program fails only when it cannot run at all).
BENCH_SRC := $(sort $(wildcard tests/bench/*.c)) tests/harness/redis_server.c
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/%.o)

.PHONY: bench
$(BUILD)/bench/dlock_bench: $(BENCH_OBJ) $(BUILD)/libdlock.a
	@mkdir -p $(@D)
	$(CC) -o $@ $(BENCH_OBJ) $(BUILD)/libdlock.a $(LDLIBS_ALL)

bench: $(BUILD)/bench/dlock_bench
	$(BUILD)/bench/dlock_bench --scripts objects/scripts

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- fault tests and cross-process stress (tests/faults/, issue 8) --------
# dlock_fault_helper is the "other process" the fault and stress programs
# fork+exec (next to them in $(BUILD)/tests/). The fast fault cases join
# `make check` (tests/main.c calls dlock_test_faults); `make faults` runs
# them with the slow ones; `make stress-processes` runs 4 processes x 4
# threads x 2000 iterations per lock type (STRESS_ARGS="procs threads iters"
# to change).
FAULT_SRC    := tests/faults/cases.c tests/faults/child.c tests/faults/proxy.c \
                tests/faults/stall_cases.c tests/faults/stress.c \
                tests/faults/sentinel_cases.c
FAULT_OBJ    := $(FAULT_SRC:%.c=$(BUILD)/%.o)
FAULT_HELPER := $(BUILD)/tests/dlock_fault_helper
STRESS_ARGS  ?= 4 4 2000

TEST_OBJ += $(FAULT_OBJ)
$(BUILD)/tests/dlock_tests: $(FAULT_OBJ) | $(FAULT_HELPER)

$(FAULT_HELPER): $(BUILD)/tests/faults/helper.o $(BUILD)/libdlock.a
	$(CC) -o $@ $< $(BUILD)/libdlock.a $(LDLIBS_ALL)

$(BUILD)/tests/dlock_faults: $(BUILD)/tests/faults/faults_main.o $(FAULT_OBJ) \
                             $(BUILD)/tests/harness/redis_server.o \
                             $(BUILD)/tests/harness/sentinels.o $(BUILD)/libdlock.a \
                             | $(FAULT_HELPER)
	$(CC) -o $@ $(filter %.o,$^) $(BUILD)/libdlock.a -lcmocka $(LDLIBS_ALL)

$(BUILD)/tests/dlock_stress: $(BUILD)/tests/faults/stress_main.o \
                             $(BUILD)/tests/faults/stress.o $(BUILD)/tests/faults/child.o \
                             $(BUILD)/tests/harness/redis_server.o $(BUILD)/libdlock.a \
                             | $(FAULT_HELPER)
	$(CC) -o $@ $(filter %.o,$^) $(BUILD)/libdlock.a $(LDLIBS_ALL)

.PHONY: faults stress-processes stress
faults: $(BUILD)/tests/dlock_faults
	$(BUILD)/tests/dlock_faults

stress-processes: $(BUILD)/tests/dlock_stress
	$(BUILD)/tests/dlock_stress $(STRESS_ARGS)

# `make stress`: every stress suite. Each suite's block adds its own target
# as a prerequisite (`stress: stress-differential` in the differential
# tests' block); make merges the lines.
stress: stress-processes

# ---- stress: the long differential run -------------------------------------
# `make stress-differential` compares >= 100 000 random commands and 10 000
# random scripts between the mock store and a throwaway redis-server
# (tests/differential_test.c; make check runs a quick slice of it).
# `make stress` runs every stress target: others add theirs with a
# prerequisite line of their own (`stress: stress-xyz`).
STRESS_DIFF_COMMANDS ?= 100000
STRESS_DIFF_SCRIPTS  ?= 10000

.PHONY: stress stress-differential
stress: stress-differential

$(BUILD)/stress/stress_differential: tests/differential/stress_main.c \
    $(BUILD)/tests/differential_test.o $(BUILD)/tests/harness/redis_server.o \
    $(BUILD)/libdlock.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/tests/differential_test.o \
	  $(BUILD)/tests/harness/redis_server.o $(BUILD)/libdlock.a -lcmocka $(LDLIBS_ALL)

stress-differential: $(BUILD)/stress/stress_differential
	$< $(STRESS_DIFF_COMMANDS) $(STRESS_DIFF_SCRIPTS)

# ---- fuzzing ---------------------------------------------------------------
# `make fuzz` builds the library and the libFuzzer targets of tests/fuzz/
# with clang (ASan + UBSan) in $(FUZZ_BUILD), then runs each target for
# FUZZ_TIME seconds, starting from its seed corpus tests/fuzz/corpus/<t>/
# (which also holds the inputs of every crash found, as regressions).
# Crashes land in $(FUZZ_BUILD)/fuzz/crash-<t>-*. The script target runs on
# a library built with a 200 ms script limit and a 64 MiB Lua memory cap,
# so that no input can hang or exhaust the fuzzer.
FUZZ_BUILD   ?= $(BUILD)-fuzz
FUZZ_TIME    ?= 20
FUZZ_TARGETS := url config codec script
FUZZ_SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=all

.PHONY: fuzz fuzz-run
fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) CC=clang OPT="-O1 -g" \
	  SANITIZE="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	  CFLAGS="-DDLOCK_MOCK_SCRIPT_TIME_LIMIT_MS=200 -DDLOCK_MOCK_LUA_MEM_LIMIT=67108864" \
	  fuzz-run

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libdlock.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(BUILD)/libdlock.a $(LDLIBS_ALL)

fuzz-run: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD)/fuzz/corpus-$$t; \
	  echo "== fuzz_$$t for $(FUZZ_TIME) s"; \
	  $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_TIME) -timeout=10 \
	    -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz/crash-$$t- \
	    $(BUILD)/fuzz/corpus-$$t tests/fuzz/corpus/$$t; \
	done
