/*
 * Every suite of the test program behind `make check` (tests/main.c), one
 * line each, in the order it runs them (libuv's test/test-list.h, as
 * X-macros): main.c makes the declarations, the tables and the loops from
 * these lists, so nothing else names the suites.
 *
 * Adding a case:
 *   - to a lock type: that type's file in tests/conformance/ (the group's
 *     line below names it), one DLOCK_FX_CASE(...) line in its case table.
 *     It runs on every row of that line: nothing to add here.
 *   - to a backend: tests/backends/<backend>/<topic>_test.c (the suite's
 *     line below names it), one line in its table.
 * Adding a file of cases is one line here:
 *   - DLOCK_TEST_GROUPS: X(function, what, rows), for `int function(const
 *     char *backend)`: a conformance group, run on each row in rows (the
 *     ROW_ bits below) as the phase "<what> on <row>".
 *   - DLOCK_TEST_SUITES: X(function, part), for `int function(void)`: run
 *     once, before the conformance rows; part is its name for
 *     DLOCK_TEST_ONLY=part (and the phase the hang alarm names).
 *   - DLOCK_TEST_SUITES_LAST: the same, run after the rows.
 * The cluster slot row (tests/cluster_slots_test.c: the mock under Redis
 * Cluster's slot rules) picks its groups itself: add a group there too when
 * its objects have keys of their own.
 */
#ifndef DLOCK_TEST_SUITES_H
#define DLOCK_TEST_SUITES_H

/* The rows a conformance group runs on, as DLOCK_TEST_ONLY names them. */
#define ROW_MOCK     0x01 /* "mock": the mock backend, on its virtual clock */
#define ROW_REDIS    0x02 /* "redis": a throwaway redis-server, plain TCP */
#define ROW_TLS      0x04 /* "redis-tls": rediss://; DLOCK_TEST_TLS_FULL=1 */
#define ROW_SENTINEL 0x08 /* "redis-sentinel"; DLOCK_TEST_SENTINEL_FULL=1 */
#define ROW_CLUSTER  0x10 /* "redis-cluster": 3 masters, 3 replicas */
#define ROW_ACL      0x20 /* "redis-acl": plain TCP as the README's
                           * least-privilege ACL user (Deploying) */
#define ROWS_ALL (ROW_MOCK | ROW_REDIS | ROW_TLS | ROW_SENTINEL | ROW_CLUSTER | ROW_ACL)
/* Not a row: with ROW_TLS or ROW_SENTINEL, the group runs there even
 * without the row's _FULL=1 variable (beside the reentrant lock's cases),
 * for a group whose subject is the transport or the topology. */
#define ROW_TRIMMED_TOO 0x40
/* Not a row: the group runs again on the mock behind Redis Cluster's slot
 * check (tests/cluster_slots_test.c): a lock type with keys of its own
 * marks its group so, and the check sees its scripts stay in one slot. */
#define ROW_SLOTS 0x80
/* Every conformance group runs on the ACL row, so that a command, key or
 * channel the library needs and the README's ACL line lacks fails there
 * with NOPERM (the sample runs on the redis row only: its lock name is not
 * under the line's "dlock" prefix). */
#define ROWS_PLAIN (ROW_MOCK | ROW_REDIS | ROW_ACL)
/* The TLS and Sentinel rows run every group only with their _FULL=1
 * variable; else, like the pooled row ("redis-pool"), they run the
 * reentrant lock's generic cases and the groups marked ROW_TRIMMED_TOO
 * (tests/main.c): the async group, whose waits and round trips go through
 * the loop's own sockets (TLS) and must follow the master (Sentinel). The spin and simple
 * locks add lock semantics, which the transport does not change: mock and
 * plain TCP only, for make check's time. */

/* The suites of an optional part (make WITH_TLS=0 WITH_YAML=0 leave the
 * part out of the library, and these files out of the test program, which
 * the Makefile then builds with DLOCK_TEST_NO_TLS / DLOCK_TEST_NO_YAML). */
#ifdef DLOCK_TEST_NO_TLS
#define DLOCK_TEST_IF_TLS(x)
#else
#define DLOCK_TEST_IF_TLS(x) x
#endif
#ifdef DLOCK_TEST_NO_YAML
#define DLOCK_TEST_IF_YAML(x)
#else
#define DLOCK_TEST_IF_YAML(x) x
#endif

/* X(function, what, rows): `int function(const char *backend)`. The
 * generic cases (*) run on the reentrant, fair and fenced locks. */
#define DLOCK_TEST_GROUPS(X)                                                                         \
    /* tests/conformance/: one file per lock type */                                                 \
    X(dlock_test_conformance, "conformance", ROWS_ALL | ROW_SLOTS)     /* reentrant_cases.c * */     \
    X(dlock_test_semaphore, "semaphore", ROWS_ALL | ROW_SLOTS)         /* semaphore_cases.c */       \
    X(dlock_test_latch, "latch", ROWS_ALL | ROW_SLOTS)                 /* latch_cases.c */           \
    X(dlock_test_fair, "fair lock", ROWS_ALL | ROW_SLOTS)              /* fair_cases.c */            \
    X(dlock_test_rwlock, "read-write lock", ROWS_ALL | ROW_SLOTS)      /* rwlock_cases.c */          \
    /* ... and by topic, across the types */                                                         \
    X(dlock_test_values, "values", ROWS_ALL)                           /* values_cases.c */          \
    X(dlock_test_bounds, "bounds", ROWS_ALL)                           /* bounds_cases.c */          \
    X(dlock_test_lifecycle, "lifecycle", ROWS_ALL)                     /* lifecycle_cases.c */       \
    X(dlock_test_interop, "interop", ROWS_ALL)                         /* interop_cases.c */         \
    X(dlock_test_redisson_parity, "Redisson parity", ROWS_ALL | ROW_SLOTS) /* redisson_parity_cases.c */ \
    X(dlock_test_spin, "spin lock", ROWS_PLAIN)                        /* spin_cases.c */            \
    X(dlock_test_simple, "simple lock", ROWS_PLAIN | ROW_SLOTS)        /* simple_cases.c */          \
    X(dlock_test_inspection, "inspection", ROW_MOCK | ROW_REDIS | ROW_CLUSTER) /* inspection_cases.c; admin rights, not the ACL row */ \
    X(dlock_test_sample_custom_lock, "samples/custom_lock", ROW_REDIS) /* tests/sample_test.c */     \
    X(dlock_test_lease_control, "lease control", ROWS_ALL)             /* lease_control_cases.c */   \
    X(dlock_test_names, "reserved names", ROWS_ALL | ROW_SLOTS)        /* name_cases.c */            \
    X(dlock_test_async, "async", ROWS_ALL | ROW_TRIMMED_TOO)           /* async_cases.c */ \
    X(dlock_test_wake, "wake", ROWS_ALL)                               /* wake_cases.c */ \
    X(dlock_test_loop_close, "loop close", ROW_MOCK | ROW_REDIS)             /* loop_close_cases.c */ \
    X(dlock_test_cpp, "C++", ROWS_PLAIN)                               /* cpp_cases.cpp (api/dlock.hpp) */ \
    X(dlock_test_prometheus, "prometheus", ROW_MOCK | ROW_REDIS)       /* prometheus_cases.c; its names are not under the ACL row's prefix */

/* X(function, part): `int function(void)`, before the conformance rows. */
#define DLOCK_TEST_SUITES(X)                                                                               \
    /* tests/core/ */                                                                                      \
    X(dlock_test_core_fmt, "core formatting tests")                    /* fmt_test.c */                    \
    X(dlock_test_core_fiber, "core fiber tests")                       /* fiber_test.c */                  \
    X(dlock_test_core_utf8, "core utf8 tests")                         /* utf8_test.c */                   \
    X(dlock_test_core_edit_distance, "core edit distance tests")       /* edit_distance_test.c */          \
    X(dlock_test_core_url_param, "core url parameter tests")           /* url_param_test.c */              \
    X(dlock_test_core_wait, "core wait tests")                         /* wait_test.c */                   \
    /* tests/backends/mock/ */                                                                             \
    X(dlock_test_mock_store, "mock store tests")                       /* store_test.c */                  \
    X(dlock_test_mock_clock, "mock clock tests")                       /* vclock_test.c */                 \
    /* tests/backends/redis/ */                                                                            \
    X(dlock_test_redis_backend, "redis backend tests")                 /* backend_test.c */                \
    X(dlock_test_redis_mux, "redis mux tests")                         /* mux_test.c */                    \
    X(dlock_test_redis_split, "redis split call tests")                /* split_test.c */                  \
    X(dlock_test_redis_lazy, "redis lazy connect tests")               /* lazy_test.c */                   \
    X(dlock_test_redis_async_io, "redis async I/O tests")              /* async_io_test.c */               \
    X(dlock_test_redis_log_hook, "observability redis tests")          /* log_hook_test.c */               \
    X(dlock_test_redis_safety, "redis safety tests")                   /* safety_test.c */                 \
    /* tests/backends/mock/: the mock against a redis-server */                                            \
    X(dlock_test_differential, "differential test of the mock")        /* differential_test.c */           \
    /* tests/ */                                                                                           \
    X(dlock_test_bad_input, "bad-input matrix")                        /* bad_input_test.c */              \
    DLOCK_TEST_IF_YAML(X(dlock_test_redisson_yaml, "redisson yaml tests")) /* backends/redis/redisson_yaml_test.c */ \
    X(dlock_test_build_options, "build options tests")                 /* build_options_test.c */          \
    X(dlock_test_cli, "cli tests")                                     /* cli_test.c */                    \
    X(dlock_test_redlock, "redlock tests")                             /* types/redlock_test.c */          \
    X(dlock_test_composite_conformance, "redlock conformance")         /* conformance/composite_types.c */ \
    X(dlock_test_async_adapters, "async adapter tests")                /* async_adapters_test.c */ \
    X(dlock_test_async_reserve, "async reserve tests")                 /* async_reserve_test.c */

/* X(function, part): the same, for the matrix (`make check-matrix`, not
 * `make check`): the topologies' own suites (TLS, Sentinel, Cluster,
 * replica-synced writes), the hostile servers; run after the suites above
 * when the scope has them. */
#define DLOCK_TEST_SUITES_MATRIX(X)                                                                        \
    DLOCK_TEST_IF_TLS(X(dlock_test_redis_tls, "redis TLS tests"))     /* tls_test.c */                    \
    X(dlock_test_redis_sentinel, "redis Sentinel tests")               /* sentinel_test.c */               \
    X(dlock_test_redis_cluster, "redis Cluster tests")                 /* cluster_test.c */                \
    X(dlock_test_redis_sync, "redis sync tests")                       /* sync_test.c */                   \
    X(dlock_test_redis_hostile, "redis hostile server tests")          /* hostile_test.c */                \
    X(dlock_test_redis_async_topology, "redis async topology tests")  /* async_topology_test.c */         \
    X(dlock_test_redis_cluster_harness, "redis cluster harness tests") /* cluster_harness_test.c */        \
    X(dlock_test_cluster_slots, "cluster slot tests")                  /* cluster_slots_test.c */

/* X(function, part): `int function(void)`, after the conformance rows; the
 * matrix's too. */
#define DLOCK_TEST_SUITES_LAST(X)                                  \
    X(dlock_test_faults, "fault tests") /* tests/faults/cases.c */

/* The declarations, for main.c and for a suite that runs another's groups. */
#define DLOCK_TEST_DECLARE_GROUP(fn, what, rows) int fn(const char *backend);
#define DLOCK_TEST_DECLARE_SUITE(fn, part) int fn(void);

#endif /* DLOCK_TEST_SUITES_H */
