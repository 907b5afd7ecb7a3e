# dlock — the ABI check, included by the Makefile (which defines BUILD and
# the libraries).
#
#   make abi-check      the check's own test (tests/abi/selftest.sh: planted
#                       changes to a tiny library), then
#                       the built libdlock.so and libdlock-mock.so against
#                       the baseline kept in abi/ (abidiff, Debian's
#                       abigail-tools): fails on any change other than
#                       additions unless the soname changed too
#   make abi-baseline   writes abi/ from the built libraries: run it in the
#                       commit that bumps SOVERSION, or that makes a change
#                       the check refused and you have reviewed as compatible
#
# Only what the public headers (api/) declare is compared; the libraries
# are built with -g (the default OPT), which abidw reads.
ABI_LIBS := libdlock libdlock-mock
ABIDW    := abidw --headers-dir api --drop-private-types --no-corpus-path \
            --no-comp-dir-path --no-show-locs

.PHONY: abi-dump abi-check abi-baseline
abi-dump: $(BUILD)/libdlock.so $(BUILD)/libdlock-mock.so
	@mkdir -p $(BUILD)/abi
	@for l in $(ABI_LIBS); do \
	  $(ABIDW) --out-file $(BUILD)/abi/$$l.abi $(BUILD)/$$l.so || exit 1; done

abi-check: abi-dump
	@sh tests/abi/selftest.sh $(BUILD)/abi-selftest
	@sh tests/abi/check.sh abi $(BUILD)/abi $(ABI_LIBS)

abi-baseline: abi-dump
	@mkdir -p abi
	@for l in $(ABI_LIBS); do cp $(BUILD)/abi/$$l.abi abi/$$l.abi; done
	@echo "abi-baseline: abi/ now holds the ABI of this build ($(ABI_LIBS)); commit it"
