# make check-fibers, make check-aarch64: the fiber switches the default build
# does not take (core/fiber.c's header says which build takes which).
#
# make check-fibers builds the library and the test program twice more, in
# their own folders, and runs the fiber, async and mock parts on each:
#   build-ucontext/  -DDLOCK_FIBER_UCONTEXT: the ucontext switch forced (what
#                    every platform but x86-64 runs)
#   build-cet/       -fcf-protection (__CET__, the default of several
#                    distributions' compilers): the ucontext switch again,
#                    chosen by the flag, with the IBT and shadow-stack code
#                    the compiler adds around it
# then, on build-ucontext/ and on the default build (the x86-64 assembly
# switch), gdb's backtrace through a parked operation
# (tests/fibers/gdb_backtrace.sh) and the fiber and async parts under
# Valgrind, which must report no error and no "client switching stacks"
# (the stacks are registered with it). gdb and Valgrind are skipped, with a
# note, where they are not installed. Under a minute of building per folder on
# 2 cores, seconds of tests.
#
# make check-aarch64 cross-builds the same twice with Debian's aarch64
# toolchain (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) against the
# arm64 -dev packages (dpkg --add-architecture arm64; .ci/run lists them)
# and runs the parts under qemu-user: build-aarch64/ on the aarch64
# assembly switch (core/fiber.c; its unwind rules are checked by the
# fiber tests' backtrace(3) case), build-aarch64-ucontext/ on the ucontext
# one. About 1 minute of building and 1 of tests each. Debian's libevent-dev is not co-installable across architectures:
# without libevent:arm64's files the adapters' libevent case is left out
# (said in the output).
#
# Which parts (tests/suites.h): the fibers' own tests, the mock's store and
# clock, the Redis backend's asynchronous I/O (socket waits in fibers, on a
# throwaway redis-server: the host's, also for the aarch64 run), the loop
# adapters, and the async group on the mock row; on aarch64 see
# AARCH64_PARTS.

FIBER_PARTS  ?= core fiber tests,mock store tests,mock clock tests,redis async I/O tests,async adapter tests,mock
FIBER_GROUPS ?= async
# Under qemu: the same, the core's formatting tests too, and on the mock
# row the reentrant lock's generic cases beside the async group (~1 minute
# under emulation).
AARCH64_PARTS  := core formatting tests,$(FIBER_PARTS)
AARCH64_GROUPS := async,conformance
FIBER_BUILDS := build-ucontext build-cet build-aarch64 build-aarch64-ucontext
# What the run is expected to have (tests/core/fiber_test.c checks it).
FIBER_SWITCH ?=
# What runs the test program (qemu for a cross build).
FIBER_RUNNER ?=

AARCH64_PREFIX ?= aarch64-linux-gnu-
AARCH64_PKG_CONFIG_LIBDIR ?= /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
# Without -L: the program runs on the arm64 C library and loader that the
# :arm64 packages bring (/lib/ld-linux-aarch64.so.1); with -L
# /usr/aarch64-linux-gnu (the cross toolchain's C library, another build)
# qemu 7.2 hangs in the first pthread_create.
QEMU_AARCH64 ?= qemu-aarch64

.PHONY: check-fibers check-aarch64 fibers-run fibers-tools

check-fibers:
	@$(MAKE) --no-print-directory BUILD=build-ucontext CFLAGS="$(CFLAGS) -DDLOCK_FIBER_UCONTEXT" \
	  FIBER_SWITCH=ucontext fibers-run fibers-tools
	@$(MAKE) --no-print-directory BUILD=build-cet CFLAGS="$(CFLAGS) -fcf-protection" \
	  CXXFLAGS="$(CXXFLAGS) -fcf-protection" FIBER_SWITCH=ucontext fibers-run
	@$(MAKE) --no-print-directory fibers-tools

# $(call aarch64_run,BUILD,CFLAGS,SWITCH): cross-builds BUILD's test program
# with CFLAGS, checks it is an aarch64 program and runs the parts under qemu.
AARCH64_MAKE = PKG_CONFIG_LIBDIR=$(AARCH64_PKG_CONFIG_LIBDIR) $(MAKE) --no-print-directory \
  CC=$(AARCH64_PREFIX)gcc CXX=$(AARCH64_PREFIX)g++ AR=$(AARCH64_PREFIX)ar
define aarch64_run
	@$(AARCH64_MAKE) BUILD=$(1) CFLAGS="$(CFLAGS) $(2)" $(1)/tests/dlock_tests
	@$(AARCH64_PREFIX)readelf -h $(1)/tests/dlock_tests | grep -q 'AArch64' || { \
	  echo "check-aarch64: $(1)/tests/dlock_tests is not an aarch64 program"; exit 1; }
	@$(AARCH64_MAKE) BUILD=$(1) CFLAGS="$(CFLAGS) $(2)" FIBER_SWITCH="$(3)" \
	  FIBER_RUNNER="$(QEMU_AARCH64)" FIBER_PARTS="$(AARCH64_PARTS)" \
	  FIBER_GROUPS="$(AARCH64_GROUPS)" fibers-run
endef

check-aarch64:
	@command -v $(AARCH64_PREFIX)gcc >/dev/null && command -v $(AARCH64_PREFIX)g++ >/dev/null || { \
	  echo "check-aarch64: no $(AARCH64_PREFIX)gcc/g++ (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu; .ci/run installs them)"; exit 1; }
	@command -v $(firstword $(QEMU_AARCH64)) >/dev/null || { \
	  echo "check-aarch64: no $(firstword $(QEMU_AARCH64)) (qemu-user)"; exit 1; }
	$(call aarch64_run,build-aarch64,,aarch64 assembly)
	$(call aarch64_run,build-aarch64-ucontext,-DDLOCK_FIBER_UCONTEXT,ucontext)

# The parts on $(BUILD)'s test program.
fibers-run: $(BUILD)/tests/dlock_tests
	@echo "$(BUILD)/tests/dlock_tests$(if $(FIBER_RUNNER), under $(FIBER_RUNNER)): $(FIBER_PARTS) (groups: $(FIBER_GROUPS))"
	@DLOCK_TEST_FIBER_SWITCH="$(FIBER_SWITCH)" DLOCK_TEST_ONLY="$(FIBER_PARTS)" \
	  DLOCK_TEST_GROUP="$(FIBER_GROUPS)" $(FIBER_RUNNER) $(BUILD)/tests/dlock_tests

# gdb's backtrace through a parked operation, and Valgrind on the fibers'
# and the async group's parts, on $(BUILD)'s test program.
fibers-tools: $(BUILD)/tests/dlock_tests
	@sh tests/fibers/gdb_backtrace.sh $(BUILD)/tests/dlock_tests
	@if ! command -v valgrind >/dev/null 2>&1; then echo "valgrind: skipped (not installed)"; exit 0; fi; \
	log=$(BUILD)/fibers-valgrind.log; \
	DLOCK_TEST_ONLY="core fiber tests,mock" DLOCK_TEST_GROUP=async DLOCK_TEST_TIMEOUT=600 \
	  valgrind --error-exitcode=99 $(BUILD)/tests/dlock_tests > $$log 2>&1; rc=$$?; \
	if [ $$rc -ne 0 ]; then tail -n 30 $$log; echo "valgrind: FAIL (exit $$rc; log: $$log)"; exit 1; fi; \
	if grep -q 'switching stacks' $$log; then grep -A1 'switching stacks' $$log; \
	  echo "valgrind: FAIL: a fiber switch looked like a stack overflow (log: $$log)"; exit 1; fi; \
	echo "valgrind: ok on $(BUILD): no error, no stack-switch warning ($$(grep -E '^[0-9]+ passed' $$log))"
