# make check-minimal: the minimal build (WITH_TLS=0 WITH_YAML=0: no libssl,
# no libyaml; Makefile) in build-minimal/, and the parts of the suite that
# apply to it: the build options' own cases (the left-out parts refuse
# with DLOCK_ENOTSUP, dlock_version_info and `dlock --version` say so),
# every lock type's conformance cases on the mock and on a throwaway
# redis-server, the mock's and the Redlock suites, and the samples on the
# mock. The TLS and YAML suites are not compiled in (tests/suites.h:
# DLOCK_TEST_IF_TLS); suites that mix TLS cases into plain ones (the Redis
# backend's URL, lazy-connection and mux suites, the tool's and the
# bad-input matrix) are left to the full build.
# Included by the Makefile (defines BUILD, SAMPLES and the test program).
MINIMAL_BUILD ?= build-minimal
MINIMAL_PARTS := build options tests,core formatting tests,mock store tests,mock clock tests,redlock tests,redlock conformance,mock,redis
.PHONY: check-minimal
check-minimal:
	$(MAKE) --no-print-directory BUILD=$(MINIMAL_BUILD) WITH_TLS=0 WITH_YAML=0 \
	  $(MINIMAL_BUILD)/libdlock.so $(MINIMAL_BUILD)/tests/dlock_tests \
	  $(MINIMAL_BUILD)/samples/custom_lock $(MINIMAL_BUILD)/dlock demo
	@set -e; b=$(MINIMAL_BUILD); \
	needed=$$(readelf -d $$b/libdlock.so | grep NEEDED); \
	echo "$$b/libdlock.so: $$(echo "$$needed" | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')"; \
	for l in libssl libyaml liblua; do \
	  if echo "$$needed" | grep -q "$$l"; then \
	    echo "check-minimal: FAIL: $$b/libdlock.so needs $$l"; exit 1; fi; done; \
	$$b/dlock --version; \
	$$b/dlock --version | grep -qx 'built with: mock (without: tls yaml)' || \
	  { echo "check-minimal: FAIL: dlock --version"; exit 1; }; \
	echo "$$b/tests/dlock_tests (DLOCK_TEST_ONLY=$(MINIMAL_PARTS))"; \
	DLOCK_SAMPLES_DIR=$$b/samples DLOCK_TEST_ONLY="$(MINIMAL_PARTS)" $$b/tests/dlock_tests
