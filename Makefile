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
PKGS      := hiredis lua5.1 uuid jansson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))

WARN      := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS_ALL = -std=c99 -D_GNU_SOURCE -fPIC $(OPT) $(WARN) $(SANITIZE) \
             -Iapi -I$(BUILD)/gen $(PKG_CFLAGS) $(CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lpthread $(SANITIZE) $(LDFLAGS)

SCRIPTS   := $(sort $(wildcard objects/scripts/*.lua))
LIB_SRC   := $(sort $(wildcard objects/*.c backends/common/*.c \
                               backends/mock/*.c backends/redis/*.c codecs/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/scripts.o

TEST_SRC  := $(sort $(wildcard tests/*.c tests/harness/*.c tests/conformance/*.c))
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
SAMPLES   := $(patsubst samples/%.c,$(BUILD)/samples/%,$(wildcard samples/*.c))

.PHONY: all check demo asan tsan install clean headers-check
all: $(BUILD)/libdlock.a $(BUILD)/libdlock.so $(BUILD)/dlock.pc

$(BUILD)/gen/scripts.h: $(SCRIPTS) objects/scripts/embed.sh
	@mkdir -p $(@D)
	sh objects/scripts/embed.sh h $(SCRIPTS) > $@
$(BUILD)/gen/scripts.c: $(SCRIPTS) objects/scripts/embed.sh $(BUILD)/gen/scripts.h
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
