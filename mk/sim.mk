# dlock — the deterministic simulation, included by the Makefile (which
# defines BUILD, CC, CFLAGS_ALL, LDLIBS_ALL and the libraries).
#
#   make simulate                 seeds for SECONDS (default 10) of CPU time,
#                                 after the checkers' self-tests and a
#                                 two-process determinism check of one seed
#   make simulate SEED=n          replays seed n alone (run twice: the two
#                                 histories must hash alike); SIM_ARGS adds
#                                 the shrinker's overrides (--clients ...)
#   make simulate SECONDS=3600    a long run
#   make simulate-smoke           a few seconds (part of `make check`)

# ---- the simulator (tests/sim/) -----------------------------------------------
# One thread, one seed: clients with their loops in poll mode on one mock
# store and its virtual clock, behind the fault backend (tests/sim/fault.c,
# a wrapper written on the public dlock/sys/backend.h). Linked like the
# other test programs, with the mock, against the static library.
SIM_SRC := $(sort $(wildcard tests/sim/*.c)) tests/harness/wrap_backend.c
SIM_OBJ := $(SIM_SRC:%.c=$(BUILD)/%.o)
SIM_BIN := $(BUILD)/tests/dlock_sim
SECONDS ?= 10
SIM_ARGS ?=

$(SIM_OBJ): $(wildcard tests/sim/*.h)
$(SIM_BIN): $(SIM_OBJ) $(DLOCK_A)
	$(CC) -o $@ $(SIM_OBJ) $(DLOCK_A) $(LDLIBS_ALL)

.PHONY: simulate simulate-smoke
ifdef SEED
simulate: $(SIM_BIN)
	$(SIM_BIN) --seed $(SEED) --trace $(SIM_ARGS)
else
simulate: $(SIM_BIN)
	$(SIM_BIN) --self-test
	$(SIM_BIN) --seed 7 --history $(BUILD)/sim-history-1.txt > /dev/null
	$(SIM_BIN) --seed 7 --history $(BUILD)/sim-history-2.txt > /dev/null
	cmp $(BUILD)/sim-history-1.txt $(BUILD)/sim-history-2.txt
	$(SIM_BIN) --seed $$(date +%s) --seconds $(SECONDS) $(SIM_ARGS)
endif

# Seeds that once failed, replayed as regression cases (each: seed, then
# the replay line's arguments; a comment says what it found).
# 1796205984: a fair lock's holder re-entering ahead of a waiter, after a
# late request ran its acquisition twice (the checker's model, check.c
# holds_before, fixed)
# 12: a permit-expirable semaphore's acquisition retried after its reply
# was lost took the count twice for one set of ids, a permit lost for
# good (objects/scripts/permit_acquire.lua, fixed)
# 1796232877: a MultiLock granted while another owner held it, after a
# force unlock answered ECONN had (maybe) run on its members (the
# checker's model: a force unlock that may have run ends the holds,
# check.c late_force, fixed)
SIM_REGRESSIONS := "1796205984 --clients 2 --owners 1 --ops 750 --types 0x1ff --faults 0xa" \
	"12 --clients 5 --owners 1 --ops 21 --types 0x7bf --faults 0x28c" \
	"1796232877 --clients 5 --owners 1 --ops 1500 --types 0xfff --faults 0x24f"

# A few seconds: the self-tests, the regression seeds and 2 s of seeds
# from a fixed start.
simulate-smoke: $(SIM_BIN)
	@$(SIM_BIN) --self-test --ops 400 > $(BUILD)/simulate-smoke.out 2>&1 && \
	  for r in $(SIM_REGRESSIONS); do \
	    $(SIM_BIN) --no-shrink --seed $$r >> $(BUILD)/simulate-smoke.out 2>&1 || \
	      { cat $(BUILD)/simulate-smoke.out; echo "simulate-smoke: seed $$r failed"; exit 1; }; \
	  done && \
	  $(SIM_BIN) --seed 1 --seconds 2 >> $(BUILD)/simulate-smoke.out 2>&1 || \
	  { cat $(BUILD)/simulate-smoke.out; echo "simulate-smoke: failed"; exit 1; }; \
	  tail -n 1 $(BUILD)/simulate-smoke.out
