# dlock — fuzzing, included by the Makefile (which defines BUILD, CC,
# CFLAGS_ALL, LDLIBS_ALL and the libraries).
#
#   make fuzz      the libFuzzer targets of tests/fuzz/, FUZZ_TIME s each

# ---- fuzzing ----------------------------------------------------------------
# `make fuzz` builds the library and the libFuzzer targets of tests/fuzz/
# with clang (ASan + UBSan) in $(FUZZ_BUILD), then runs each target for
# FUZZ_TIME seconds, starting from its seed corpus tests/fuzz/corpus/<t>/
# (which also holds the inputs of every crash found, as regressions).
# Crashes land in $(FUZZ_BUILD)/fuzz/crash-<t>-*. The script target runs on
# a library built with a 200 ms script limit and a 64 MiB Lua memory cap,
# so that no input can hang or exhaust the fuzzer.
FUZZ_BUILD   ?= $(BUILD)-fuzz
FUZZ_TIME    ?= 20
FUZZ_TARGETS := url config redisson_yaml codec script
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
