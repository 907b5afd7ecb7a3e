# make check-valkey: the whole suite (`make check-all`) against Valkey instead of
# Debian 12's redis-server, so that the library meets a newer server than
# Redis 7.0 (Valkey, the BSD-licensed fork of Redis, at the version in
# ../shared/servers/, between 8.0 and 8.1; README "Servers").
#
# Valkey is built from its source archive into $(BUILD)/valkey the first time
# (about 35 s on 2 cores; needs build-essential, pkg-config and libssl-dev,
# as the library itself) and reused while $(BUILD)/valkey/src/valkey-server
# exists (`make clean` removes it). Its build is a make of its own, run
# alone before the suite with 2 jobs, and sees none of this Makefile's
# variables (OPT, CFLAGS, BUILD...). The suite then runs with the harness's
# switches DLOCK_REDIS_SERVER and DLOCK_REDIS_CLI (tests/harness/): every
# throwaway server it starts (plain, TLS, replicas, Sentinel, Cluster) is
# valkey-server, every cluster it makes is made with valkey-cli.
#
# VALKEY_TARBALL: the source archive (default: the one in ../shared/servers/).

VALKEY_TARBALL ?= $(firstword $(wildcard ../shared/servers/valkey-src-*.tar.gz))
VALKEY_DIR     := $(BUILD)/valkey
VALKEY_SERVER  := $(VALKEY_DIR)/src/valkey-server

.PHONY: valkey check-valkey
valkey: $(VALKEY_SERVER)

$(VALKEY_SERVER):
	@test -f "$(VALKEY_TARBALL)" || { \
	  echo "valkey: no source archive (../shared/servers/valkey-src-*.tar.gz; VALKEY_TARBALL=...)"; exit 1; }
	rm -rf $(VALKEY_DIR)
	@mkdir -p $(BUILD)
	tar xzf $(VALKEY_TARBALL) -C $(BUILD)
	@test -d $(VALKEY_DIR) || { echo "valkey: $(VALKEY_TARBALL) has no valkey/ folder"; exit 1; }
	env -u MAKEFLAGS -u MFLAGS -u MAKEOVERRIDES make -C $(VALKEY_DIR) -j2 \
	  MALLOC=libc BUILD_TLS=yes > $(VALKEY_DIR)/build.log 2>&1 || { \
	  tail -n 30 $(VALKEY_DIR)/build.log; echo "valkey: build failed (log: $(VALKEY_DIR)/build.log)"; exit 1; }
	@$(VALKEY_SERVER) --version

check-valkey:
	@$(MAKE) --no-print-directory valkey
	@echo "check-valkey: the suite against $$($(VALKEY_SERVER) --version)"
	@DLOCK_REDIS_SERVER=$(abspath $(VALKEY_SERVER)) \
	  DLOCK_REDIS_CLI=$(abspath $(VALKEY_DIR)/src/valkey-cli) \
	  $(MAKE) --no-print-directory check-all
