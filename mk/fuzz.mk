# dlock — fuzzing, included by the Makefile (which defines BUILD, CC,
# CFLAGS_ALL, LDLIBS_ALL and the libraries).
#
#   make fuzz        the libFuzzer targets of tests/fuzz/, FUZZ_TIME s each
#                    (FUZZ_SECONDS=N says the same), every one of them
#   make fuzz-smoke  each target's seed corpus replayed once, with the
#                    build's compiler (part of make check; under ASan in
#                    make asan)

# ---- fuzzing ----------------------------------------------------------------
# `make fuzz` builds the library and the libFuzzer targets of tests/fuzz/
# with clang (ASan + UBSan) in $(FUZZ_BUILD), then runs each target for
# FUZZ_TIME seconds, starting from its seed corpus tests/fuzz/corpus/<t>/
# (which also holds the inputs of every crash found, as regressions).
# Every target runs, whatever the ones before found; each one's result is
# printed at the end, and the run fails if any target failed.
# Crashes land in $(FUZZ_BUILD)/fuzz/crash-<t>-*, each target's output in
# $(FUZZ_BUILD)/fuzz/fuzz_<t>.log. The script target runs on
# a library built with a 200 ms script limit and a 64 MiB Lua memory cap,
# so that no input can hang or exhaust the fuzzer. A target with a
# dictionary, tests/fuzz/<t>.dict, is given it (-dict). Inputs stay under
# 4 KiB; fuzz_redisson_yaml's shapes mode repeats a piece of its input up
# to the configuration's 1 MiB cap, so the large shapes are reached too.
#
# The targets: url (URL parser), config (JSON configuration), codec
# (value codecs), script (the mock's Lua bridge), reply (a server's reply
# to a dlock_reply), cluster (CLUSTER SLOTS, MOVED/ASK), sentinel (SENTINEL
# GET-MASTER-ADDR-BY-NAME, +switch-master, ROLE), pubsub (the subscriber's
# reading of its connection), cli (the dlock tool's durations and counts).
# FUZZ_TARGETS="a b" runs only those.
FUZZ_BUILD   ?= $(BUILD)-fuzz
FUZZ_SECONDS ?= 20
FUZZ_TIME    ?= $(FUZZ_SECONDS)
FUZZ_TARGETS ?= url config redisson_yaml codec script reply cluster sentinel pubsub cli
FUZZ_SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=all
FUZZ_HEADERS := $(wildcard tests/fuzz/*.h)
# Sources a target compiles in besides the library (the tool is not in it).
FUZZ_EXTRA_cli := cli/duration.c

.PHONY: fuzz fuzz-run fuzz-smoke
fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) CC=clang OPT="-O1 -g" \
	  SANITIZE="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	  CFLAGS="-DDLOCK_MOCK_SCRIPT_TIME_LIMIT_MS=200 -DDLOCK_MOCK_LUA_MEM_LIMIT=67108864" \
	  FUZZ_TIME=$(FUZZ_TIME) FUZZ_TARGETS="$(FUZZ_TARGETS)" fuzz-run

$(BUILD)/fuzz/fuzz_cli $(BUILD)/fuzz-smoke/fuzz_cli: $(FUZZ_EXTRA_cli) cli/cli.h

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(DLOCK_A) $(FUZZ_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(FUZZ_EXTRA_$*) $(DLOCK_A) $(LDLIBS_ALL)

fuzz-run: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
	@failed=; summary=; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD)/fuzz/corpus-$$t; \
	  echo "== fuzz_$$t for $(FUZZ_TIME) s (output: $(BUILD)/fuzz/fuzz_$$t.log)"; \
	  dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  if $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_TIME) -timeout=10 \
	    -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 $$dict \
	    -artifact_prefix=$(BUILD)/fuzz/crash-$$t- \
	    $(BUILD)/fuzz/corpus-$$t tests/fuzz/corpus/$$t > $(BUILD)/fuzz/fuzz_$$t.log 2>&1; then \
	    r="passed: $$(grep -o 'stat::number_of_executed_units: *[0-9]*' $(BUILD)/fuzz/fuzz_$$t.log | grep -o '[0-9]*$$') runs"; \
	  else \
	    r="FAILED: $$(grep -m1 -E 'ERROR|SUMMARY|deadly signal' $(BUILD)/fuzz/fuzz_$$t.log); $$(grep -o 'Test unit written to .*' $(BUILD)/fuzz/fuzz_$$t.log)"; \
	    failed="$$failed $$t"; \
	  fi; \
	  echo "   fuzz_$$t $$r"; summary="$$summary  fuzz_$$t $$r\n"; \
	done; \
	printf "fuzz: every target for $(FUZZ_TIME) s:\n$$summary"; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed"; exit 1; fi; \
	echo "fuzz: all $(words $(FUZZ_TARGETS)) targets passed"

# ---- the fuzz smoke (make check) ----------------------------------------------
# Each target built with the build's own compiler and a standalone driver
# (tests/fuzz/driver.c: no libFuzzer needed, gcc will do) and run once on
# every input of its seed corpus: a parser change that breaks a promise
# the oracle checks, or crashes on a known input, fails make check (and
# make asan, under ASan + UBSan). Takes well under a second.
$(BUILD)/fuzz-smoke/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/driver.c $(DLOCK_A) $(FUZZ_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< tests/fuzz/driver.c $(FUZZ_EXTRA_$*) $(DLOCK_A) $(LDLIBS_ALL)

fuzz-smoke: $(FUZZ_TARGETS:%=$(BUILD)/fuzz-smoke/fuzz_%)
	@failed=; for t in $(FUZZ_TARGETS); do \
	  $(BUILD)/fuzz-smoke/fuzz_$$t tests/fuzz/corpus/$$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz-smoke: FAILED:$$failed"; exit 1; fi; \
	echo "fuzz-smoke: the seed corpus of each of the $(words $(FUZZ_TARGETS)) fuzz targets replayed, no oracle broken"
