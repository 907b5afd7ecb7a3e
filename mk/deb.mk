# make check-deb: the Debian packages of debian/ (libdlock1, libdlock-mock1,
# libdlock-dev, dlock), built as a packager would, checked with lintian
# (no error allowed), installed into this machine, then samples built and
# run against the installed files only (debian/tests/installed-sample,
# also an autopkgtest), and the packages removed again.
#
# The packages are built from a copy of the tree's files (git ls-files) in
# a temporary folder, because dpkg-buildpackage writes them next to the
# tree; inside, debian/rules builds in build-deb/ and skips the test suite
# (nocheck: the suite runs in .ci/run already). Needs root or sudo (apt-get
# install), and dpkg-dev, debhelper, lintian, fakeroot.
# Included by the Makefile.
DEB_SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
DEB_PACKAGES := libdlock1 libdlock-mock1 libdlock-dev dlock
.PHONY: check-deb
check-deb:
	@set -e; tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/dlock-deb.XXXXXX"); \
	trap '$(DEB_SUDO) apt-get purge -y -qq $(DEB_PACKAGES) >/dev/null 2>&1 || :; rm -rf "$$tmp"' EXIT; \
	mkdir "$$tmp/dlock"; \
	git ls-files -z --cached --others --exclude-standard | \
	  xargs -0 sh -c 'for f; do [ -e "$$f" ] && cp -a --parents "$$f" "$$0"; done' "$$tmp/dlock"; \
	t0=$$(date +%s); \
	( cd "$$tmp/dlock" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	  dpkg-buildpackage -us -uc -b ) >"$$tmp/build.log" 2>&1 || { tail -40 "$$tmp/build.log"; exit 1; }; \
	t1=$$(date +%s); \
	ls "$$tmp"/*.deb | sed 's|.*/|check-deb: built |'; \
	echo "check-deb: lintian"; lintian --fail-on error "$$tmp"/*.changes; \
	$(DEB_SUDO) apt-get install -y -qq --no-install-recommends \
	  $(foreach p,$(DEB_PACKAGES),"$$tmp"/$(p)_*.deb) >"$$tmp/install.log" 2>&1 || \
	  { cat "$$tmp/install.log"; exit 1; }; \
	for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null; done; \
	( cd "$$tmp/dlock" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH -u LIBRARY_PATH -u CPATH \
	  AUTOPKGTEST_TMP="$$tmp/sample" sh -c 'mkdir -p "$$AUTOPKGTEST_TMP" && debian/tests/installed-sample' ); \
	t2=$$(date +%s); \
	echo "check-deb: PASS (packages built in $$((t1 - t0)) s; lintian, install and samples in $$((t2 - t1)) s)"
