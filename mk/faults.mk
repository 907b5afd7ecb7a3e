# dlock — fault tests and stress runs, included by the Makefile (which
# defines BUILD, CC, CFLAGS_ALL, LDLIBS_ALL, TEST_OBJ and the libraries).
#
#   make faults               the fault cases, fast and slow (tests/faults/)
#   make stress               every stress run below, in this order:
#   make stress-cluster       the cross-process workload on a Redis Cluster
#   make stress-redlock       Redlock while its servers are killed
#   make stress-processes     the cross-process workload on one server
#   make stress-differential  the long differential run of the mock
#   make nemesis              the randomized fault run (tests/nemesis/)

# ---- fault tests and cross-process stress (tests/faults/) -------------------
# dlock_fault_helper is the "other process" the fault and stress programs
# fork+exec (next to them in $(BUILD)/tests/). The fast fault cases join
# `make check` (tests/main.c runs dlock_test_faults, listed in
# tests/suites.h); `make faults` runs them with the slow ones; `make
# stress-processes` runs 4 processes x 4 threads x 2000 iterations per lock
# type (STRESS_ARGS="procs threads iters" to change).
FAULT_SRC    := tests/faults/cases.c tests/faults/child.c tests/faults/proxy.c \
                tests/faults/stall_cases.c tests/faults/stress.c \
                tests/faults/sentinel_cases.c tests/faults/sync_cases.c \
                tests/faults/redlock_cases.c tests/faults/redlock_stress.c \
                tests/faults/mux_stress.c
FAULT_OBJ    := $(FAULT_SRC:%.c=$(BUILD)/%.o)
FAULT_HELPER := $(BUILD)/tests/dlock_fault_helper
STRESS_ARGS  ?= 4 4 2000

TEST_OBJ += $(FAULT_OBJ)
$(BUILD)/tests/dlock_tests: $(FAULT_OBJ) | $(FAULT_HELPER)

$(FAULT_HELPER): $(BUILD)/tests/faults/helper.o $(DLOCK_A)
	$(CC) -o $@ $< $(DLOCK_A) $(LDLIBS_ALL)

$(BUILD)/tests/dlock_faults: $(BUILD)/tests/faults/faults_main.o $(FAULT_OBJ) \
                             $(BUILD)/tests/harness/redis_server.o \
                             $(BUILD)/tests/harness/redis_client.o \
                             $(BUILD)/tests/harness/sentinels.o \
                             $(BUILD)/tests/harness/cluster.o $(DLOCK_A) \
                             | $(FAULT_HELPER)
	$(CC) -o $@ $(filter %.o,$^) $(DLOCK_A) -lcmocka $(LDLIBS_ALL)

$(BUILD)/tests/dlock_stress: $(BUILD)/tests/faults/stress_main.o \
                             $(BUILD)/tests/faults/stress.o $(BUILD)/tests/faults/child.o \
                             $(BUILD)/tests/harness/redis_server.o \
                             $(BUILD)/tests/harness/cluster.o $(DLOCK_A) \
                             | $(FAULT_HELPER)
	$(CC) -o $@ $(filter %.o,$^) $(DLOCK_A) $(LDLIBS_ALL)

.PHONY: faults
faults: $(BUILD)/tests/dlock_faults $(BUILD)/tests/dlock_tests $(BUILD)/tests/dlock_nemesis
	$(BUILD)/tests/dlock_faults
	DLOCK_TEST_ONLY='redlock conformance' DLOCK_TEST_COMPOSITE_FULL=1 \
	  $(BUILD)/tests/dlock_tests
	NEMESIS_SECONDS=60 $(BUILD)/tests/dlock_nemesis

# ---- stress -----------------------------------------------------------------
# `make stress`: every stress run, all of them named here (a new one is a
# target below and one more name on this line).
.PHONY: stress stress-cluster stress-redlock stress-processes stress-differential
stress: stress-cluster stress-redlock stress-processes stress-differential

# The cross-process workload on a Redis Cluster (3 masters + 3 replicas).
stress-cluster: $(BUILD)/tests/dlock_stress
	$(BUILD)/tests/dlock_stress --cluster $(STRESS_ARGS)

# Redlock over 5 servers while one random node at a time is killed and
# restarted empty: 0 violations expected.
stress-redlock: $(BUILD)/tests/dlock_faults
	DLOCK_REDLOCK_STRESS=1 $(BUILD)/tests/dlock_faults

stress-processes: $(BUILD)/tests/dlock_stress
	$(BUILD)/tests/dlock_stress $(STRESS_ARGS)

# `make stress-differential` compares >= 100 000 random commands and 10 000
# random scripts between the mock store and a throwaway redis-server
# (tests/backends/mock/differential_test.c; make check runs a quick slice
# of it).
STRESS_DIFF_COMMANDS ?= 100000
STRESS_DIFF_SCRIPTS  ?= 10000

$(BUILD)/stress/stress_differential: tests/backends/mock/differential/stress_main.c \
    $(BUILD)/tests/backends/mock/differential_test.o $(BUILD)/tests/harness/redis_server.o \
    $(DLOCK_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/tests/backends/mock/differential_test.o \
	  $(BUILD)/tests/harness/redis_server.o $(DLOCK_A) -lcmocka $(LDLIBS_ALL)

stress-differential: $(BUILD)/stress/stress_differential
	$< $(STRESS_DIFF_COMMANDS) $(STRESS_DIFF_SCRIPTS)

# ---- the randomized fault run (tests/nemesis/) --------------------------------
# `make nemesis`: workers take every lock type on a Sentinel set, through a
# Redlock over 5 proxied servers and on a 3-master cluster while faults are
# drawn at random; the histories are checked afterwards. NEMESIS_SECONDS
# (default 600) is the time under faults; NEMESIS_SEED replays a draw (the
# seed is printed first). `make faults` runs a 60-second smoke of it.
NEMESIS_SECONDS ?= 600
NEMESIS_OBJ := $(BUILD)/tests/nemesis/nemesis.o $(BUILD)/tests/nemesis/worker.o \
               $(BUILD)/tests/nemesis/check.o

$(BUILD)/tests/dlock_nemesis: $(NEMESIS_OBJ) $(BUILD)/tests/faults/proxy.o \
                              $(BUILD)/tests/faults/child.o \
                              $(BUILD)/tests/harness/redis_server.o \
                              $(BUILD)/tests/harness/redis_client.o \
                              $(BUILD)/tests/harness/sentinels.o \
                              $(BUILD)/tests/harness/cluster.o $(DLOCK_A)
	$(CC) -o $@ $(filter %.o,$^) $(DLOCK_A) $(LDLIBS_ALL)

.PHONY: nemesis
nemesis: $(BUILD)/tests/dlock_nemesis
	NEMESIS_SECONDS=$(NEMESIS_SECONDS) NEMESIS_SEED=$(NEMESIS_SEED) $<
