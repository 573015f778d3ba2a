# CRIU integration: make sure a working CRIU >= 4.1 is there before
# `make test` (scripts/ensure-criu.sh: the system's criu when
# `criu check` passes, else CRIU 4.1.1 built once into .cache/criu/). Not
# fatal: without a CRIU the CRIU tests skip and say why.
.PHONY: criu-ensure
criu-ensure: deps
	@scripts/ensure-criu.sh >/dev/null || \
		echo "warning: no working CRIU (scripts/ensure-criu.sh failed); the CRIU tests will be skipped" >&2
	@# the CRIU with the exclude options, built here once (never in the slow
	@# QEMU guests that run the pre-dump chains): optional, its tests skip
	@# with the reason where its source is not beside the project
	@scripts/ensure-criu-exclude.sh >/dev/null 2>&1 || true

# (not make demo: it runs no CRIU, and building one takes minutes)
test: criu-ensure

# the build-time CRIU fallback (Makefile: BUILD_CRIU) is compiled into common/criu_cli.c
$(BUILD)/common/criu_cli.o: EXTRA_CFLAGS += -DMEMLENS_BUILD_CRIU='"$(BUILD_CRIU)"'
$(BUILD)/common/criu_cli.o: Makefile

# the version (Makefile: VERSION) is compiled into common/opts.c (--version)
$(BUILD)/common/opts.o: EXTRA_CFLAGS += -DMEMLENS_VERSION='"$(VERSION)"'
$(BUILD)/common/opts.o: Makefile
$(BUILD)/agent/rpc_profile.o: EXTRA_CFLAGS += -DMEMLENS_VERSION='"$(VERSION)"'
$(BUILD)/agent/rpc_profile.o: Makefile
