# dlock — the benchmarks, included by the Makefile (which defines BUILD, CC,
# LDLIBS_ALL and the libraries).
#
#   make bench        every figure of tests/bench/, on a throwaway redis-server
#   make bench-smoke  one short figure that must run (part of `make check`)

# ---- benchmarks -------------------------------------------------------------
# `make bench` builds tests/bench/ against the static library and the
# harness's redis_server.c, and runs it: the program starts its own throwaway
# redis-server, runs every figure, stops the server. Not part of `make check`;
# figures only print (the program fails only when it cannot run at all).
BENCH_SRC := $(sort $(wildcard tests/bench/*.c)) tests/harness/redis_server.c \
             tests/harness/cluster.c tests/harness/wrap_backend.c
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/%.o)

.PHONY: bench
$(BUILD)/bench/dlock_bench: $(BENCH_OBJ) $(DLOCK_A)
	@mkdir -p $(@D)
	$(CC) -o $@ $(BENCH_OBJ) $(DLOCK_A) $(LDLIBS_ALL)

bench: $(BUILD)/bench/dlock_bench
	$(BUILD)/bench/dlock_bench --scripts objects/scripts

# One short figure, measuring nothing worth reading: it fails when a side's
# pairs fail (e.g. the raw floor's hand-built calls no longer match the
# library's scripts), which would leave the figures empty.
.PHONY: bench-smoke
bench-smoke: $(BUILD)/bench/dlock_bench
	@$(BUILD)/bench/dlock_bench --scripts objects/scripts --only uncontended \
	  --rounds 1 --round-ms 20 > $(BUILD)/bench-smoke.out 2>&1 || \
	  { cat $(BUILD)/bench-smoke.out; echo "bench-smoke: failed"; exit 1; }
