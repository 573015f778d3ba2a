# memlens — see README.md. `make demo` and `make test` are the two commands.
#
# Layout (README "Layout"):
#   lib/<part>/  -> build/libmemlens.a         kernel interfaces and the model
#   report/      -> build/libmemlens-report.a  the HTML/SVG report
#   trace/       -> build/libmemlens-trace.a   the eBPF tracers (mk/bpf.mk)
#   common/      code both binaries link (exit codes, messages, CRIU lookup)
#   src/         -> build/memlens               the command and its subcommands
#   agent/       -> build/memlens-agent         the gRPC agent (mk/agent.mk)
#   workloads/ -> build/workloads/*, tests/ -> build/tests/*, bench/
# Optional parts (eBPF tracers, the gRPC agent) add themselves in mk/*.mk.

.DEFAULT_GOAL := all
# memlens --version, memlens.pc: the one place the version is written
VERSION := 0.1.0
CC      ?= cc
BUILD   ?= build
NPROC   := $(shell nproc 2>/dev/null || echo 2)
CFLAGS  ?= -O2 -g
# CPPFLAGS and LDFLAGS (empty by default) reach the programs' compiles and
# links: a package build passes dpkg-buildflags' hardening through them
WARN    := -Wall -Wextra -Werror
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -Iinclude -Icommon -I$(BUILD)/gen -MMD -MP
LDLIBS  := -lpthread -lm
# the JSON reader (lib/format/json.c) parses with Jansson
LDLIBS  += $(shell pkg-config --libs jansson)
BASE_CFLAGS += $(shell pkg-config --cflags jansson)
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# $(call objs,DIR,SOURCES): the object of each source under DIR: x.c gives
# DIR/x.o, a generated source $(BUILD)/gen/x.c gives DIR/gen/x.o
objs = $(patsubst %.c,$(1)/%.o,$(patsubst $(BUILD)/%,%,$(2)))
# where the library's objects are built: plain, ASan+UBSan, position-
# independent (mk/shared.mk), libFuzzer. An object that includes a
# generated header names it as a prerequisite in each (lib_objs).
LIB_OBJ_DIRS := $(BUILD) $(BUILD)/asan $(BUILD)/pic $(BUILD)/fuzz/obj
lib_objs = $(foreach d,$(LIB_OBJ_DIRS),$(call objs,$(d),$(1)))

LIB_SRCS := $(wildcard lib/*/*.c)
REPORT_SRCS := $(wildcard report/*.c)
REPORT_OBJS := $(call objs,$(BUILD),$(REPORT_SRCS))
COMMON_SRCS := $(wildcard common/*.c)
# The CRIU the tools fall back to after --criu, $MEMLENS_CRIU and $PATH: the
# one scripts/ensure-criu.sh builds for this source tree. A build to install
# sets BUILD_CRIU= (empty): nothing outside PATH is then ever run.
BUILD_CRIU ?= $(CURDIR)/.cache/criu/bin/criu
COMMON_OBJS := $(call objs,$(BUILD),$(COMMON_SRCS))
# src/*.c and src/<part>/*.c: every subcommand
MEMLENS_SRCS := $(wildcard src/*.c) $(COMMON_SRCS)
WORKLOAD_SRCS := $(wildcard workloads/*.c)
WORKLOADS := $(WORKLOAD_SRCS:workloads/%.c=$(BUILD)/workloads/%)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
UNIT_ASAN := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/asan/%)
ITEST_SRCS := $(wildcard tests/integration/*.c)
ITEST_BINS := $(ITEST_SRCS:tests/integration/%.c=$(BUILD)/tests/integration/%)
# the C integration tests again, on the ASan+UBSan library (the profiler,
# the parallel snapshot walk and the CRIU flow against real processes)
ITEST_ASAN := $(ITEST_SRCS:tests/integration/%.c=$(BUILD)/tests/asan-integration/%)
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
FUZZ_SRCS := $(wildcard tests/fuzz/*.c)
FUZZ_CC ?= clang

# How each kind of object is compiled (compile_rules below). EXTRA_CFLAGS
# is set per object (mk/criu.mk, mk/pprof.mk), never for all of them.
COMPILE_plain = $(CC) $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) -c $< -o $@
COMPILE_asan = $(CC) $(BASE_CFLAGS) -O1 -g $(SAN) -c $< -o $@
COMPILE_pic = $(CC) $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@
FUZZ_FLAGS := -std=gnu11 -D_GNU_SOURCE -Iinclude -Icommon -I$(BUILD)/gen -MMD -MP -g -O1 \
	-fno-sanitize-recover=all
COMPILE_fuzz = $(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
# $(call compile_rules,DIR,KIND): DIR/x.o from x.c and DIR/gen/x.o from
# the generated $(BUILD)/gen/x.c, with COMPILE_KIND
define compile_rules
$(1)/%.o: %.c
	@mkdir -p $$(@D)
	$$(COMPILE_$(2))
$(1)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $$(@D)
	$$(COMPILE_$(2))
endef

# The optional and generated parts, in this order: the library's generated
# sources first (LIB_SRCS is complete after criustats.mk, and shared.mk
# reads it); then memlens's parts (eBPF tracers, pprof), the agent (it
# adds itself to EXTRA_TARGETS, which install.mk reads), and the rest.
MK_PARTS := criustats shared bpf pprof agent criu install package report stress
include $(MK_PARTS:%=mk/%.mk)

LIB_OBJS := $(call objs,$(BUILD),$(LIB_SRCS))
MEMLENS_OBJS := $(call objs,$(BUILD),$(MEMLENS_SRCS))

.PHONY: all test demo bench install deps clean format
all: $(BUILD)/memlens $(BUILD)/libmemlens.a $(BUILD)/libmemlens-report.a $(BUILD)/libmemlens-trace.a $(WORKLOADS) $(UNIT_BINS) $(UNIT_ASAN) \
     $(ITEST_BINS) $(ITEST_ASAN) $(BENCH_BINS) $(EXTRA_TARGETS)

$(eval $(call compile_rules,$(BUILD),plain))

$(BUILD)/libmemlens.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libmemlens-report.a: $(REPORT_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/memlens: $(MEMLENS_OBJS) $(MEMLENS_LIBS) $(BUILD)/libmemlens-report.a $(BUILD)/libmemlens.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(MEMLENS_OBJS) $(MEMLENS_LIBS) $(BUILD)/libmemlens-report.a \
		$(BUILD)/libmemlens.a $(MEMLENS_LDLIBS) $(LDLIBS)

$(BUILD)/workloads/%: workloads/%.c workloads/read_untouched.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -o $@ $< -lpthread -lm

TEST_LIBS := $(BUILD)/libmemlens-report.a $(BUILD)/libmemlens.a
# UNIT_LIBS: set per test, the libraries one unit test links besides them
# (mk/pprof.mk: the tracer library's)
$(BUILD)/tests/unit/%: tests/unit/%.c $(TEST_LIBS) tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itests -o $@ $< $(UNIT_LIBS) $(TEST_LIBS) $(LDLIBS)

# the unit tests again, with an instrumented library, under ASan+UBSan
ASAN_LIB_OBJS := $(call objs,$(BUILD)/asan,$(LIB_SRCS))
ASAN_REPORT_OBJS := $(call objs,$(BUILD)/asan,$(REPORT_SRCS))
ASAN_LIBS := $(BUILD)/asan/libmemlens-report.a $(BUILD)/asan/libmemlens.a
$(eval $(call compile_rules,$(BUILD)/asan,asan))

$(BUILD)/asan/libmemlens.a: $(ASAN_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/asan/libmemlens-report.a: $(ASAN_REPORT_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/asan/%: tests/unit/%.c $(ASAN_LIBS) tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 -g $(SAN) -Itests -o $@ $< $(UNIT_LIBS) $(ASAN_LIBS) $(LDLIBS)

$(BUILD)/tests/integration/%: tests/integration/%.c $(TEST_LIBS) tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itests -o $@ $< $(TEST_LIBS) $(LDLIBS)

$(BUILD)/tests/asan-integration/%: tests/integration/%.c $(ASAN_LIBS) tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 -g $(SAN) -Itests -o $@ $< $(ASAN_LIBS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libmemlens.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libmemlens.a $(LDLIBS)

# DEPS_OPT: the opt-in package lists (scripts/packages/optional/) a target
# needs besides the default ones; make demo needs none of them
deps:
	@scripts/install-deps.sh $(DEPS_OPT)

test: DEPS_OPT := image deb
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all asan-bins $(if $(HAVE_CLANG),fuzz-bins)
	@tests/run.sh

# make check: the quick checks, with no root, no network and no QEMU: the
# unit tests, again under ASan+UBSan, the layer rules of lib/README.md
# (scripts/check-layers.py, and its own test), libmemlens.so's export list
# and the prefixes of the archives' globals and of the public headers'
# struct/enum/union tags, typedefs, macros and enum constants
# (scripts/check-exports.py, and its own test), and
# the format
# (clang-format, where installed). Under a minute once built.
UNIT_LABELS = $(UNIT_BINS:$(BUILD)/tests/unit/%=unit/%) $(UNIT_ASAN:$(BUILD)/tests/asan/%=asan/%)
.PHONY: check unit-tests unit-bins check-layers check-exports check-format
CHECK_ARCHIVES := $(BUILD)/libmemlens.a $(BUILD)/libmemlens-report.a $(BUILD)/libmemlens-trace.a
check:
	@$(MAKE) --no-print-directory -j$(NPROC) unit-bins $(BUILD)/libmemlens.so $(CHECK_ARCHIVES)
	@scripts/check-layers.py
	@scripts/check-exports.py --so $(BUILD)/libmemlens.so
	@TEST="$(UNIT_LABELS) integration/test_layers.sh integration/test_exports.sh" \
		GUEST_KERNELS= tests/run.sh
	@$(MAKE) --no-print-directory check-format

# the unit tests and their ASan+UBSan builds only
unit-bins: $(UNIT_BINS) $(UNIT_ASAN)
unit-tests:
	@$(MAKE) --no-print-directory -j$(NPROC) unit-bins
	@TEST="$(UNIT_LABELS)" GUEST_KERNELS= tests/run.sh

check-layers:
	@scripts/check-layers.py

# lib/libmemlens.map, the public headers, libmemlens.so and doc/library.md's
# list of exported functions agree; the archives' globals are prefixed
check-exports: $(BUILD)/libmemlens.so $(CHECK_ARCHIVES)
	@scripts/check-exports.py --so $(BUILD)/libmemlens.so

# the C sources as `make format` would leave them (.clang-format)
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v vmlinux.h)
check-format:
	@if ! command -v clang-format >/dev/null; then \
		echo "check-format: skipped: no clang-format (install clang-format)"; \
	elif clang-format --dry-run -Werror $(FORMAT_SRCS); then \
		echo "check-format: $(words $(FORMAT_SRCS)) files formatted as .clang-format says"; \
	else echo "check-format: run 'make format'" >&2; exit 1; fi

# The kernel matrix: each Debian kernel booted in QEMU runs the guest suite
# (tests/kernels/); the README's kernel table is regenerated from the run.
KERNELS ?= 6.1 6.12 7.2 7.3
.PHONY: test-kernels
test-kernels: DEPS_OPT := servers
test-kernels: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@OPTIN=server tests/kernels/run.sh $(KERNELS); rc=$$?; tests/kernels/table.sh; \
		bench/servers_table.py $(BUILD)/bench/server-*.jsonl; exit $$rc

# The README's table of which command takes which common option, from the
# option tables (tests/integration/test_cli_options.sh checks it is current)
.PHONY: options-table
options-table: $(BUILD)/memlens $(if $(filter $(BUILD)/memlens-agent,$(EXTRA_TARGETS)),$(BUILD)/memlens-agent)
	@MEMLENS=$(BUILD)/memlens scripts/options-table.sh

# make test with the long variants of the tests that have one (leaks'
# exactness loops: 20 runs of each kind instead of 3; the snapshot
# exactness churn for 60 s instead of 10)
.PHONY: test-long
test-long: DEPS_OPT := image deb
test-long: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all asan-bins
	@MEMLENS_TEST_LONG=1 CHURN_SECONDS=60 tests/run.sh

# make test beside two busy loops per CPU, as on a build machine shared
# with other jobs: no test may depend on how much CPU a workload gets
.PHONY: test-loaded
test-loaded:
	@CPU_HOGS=2 $(MAKE) --no-print-directory test

# memlens and memlens-agent again, with ASan+UBSan, in $(BUILD)/asan-bin:
# tests/run.sh repeats the command-line tests that feed them untrusted
# input (gRPC payloads, report files, command lines) with these
ASAN_BIN := $(BUILD)/asan-bin
.PHONY: asan-bins
asan-bins:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BIN) CFLAGS="-O1 -g $(SAN)" \
		$(ASAN_BIN)/memlens $(ASAN_BIN)/$(SAMPLER_SO) \
		$(if $(filter $(BUILD)/memlens-agent,$(EXTRA_TARGETS)),$(ASAN_BIN)/memlens-agent)

# make demo: three steps, each said with its time (scripts/step.sh); it builds
# what it runs, memlens and three workloads: no tests, sanitizer builds,
# fuzzers, benchmarks, nor a CRIU (it runs none)
DEMO_BINS := $(BUILD)/memlens $(addprefix $(BUILD)/workloads/,memwrite memalloc matmul)
demo:
	@scripts/step.sh "demo 1/3: the Debian packages memlens needs (make deps)" \
		$(MAKE) --no-print-directory deps
	@scripts/step.sh "demo 2/3: building memlens and the demo's three workloads" \
		$(MAKE) --no-print-directory -j$(NPROC) $(DEMO_BINS)
	@BUILD=$(BUILD) scripts/step.sh "demo 3/3: the demo (scripts/demo.sh)" scripts/demo.sh

bench: DEPS_OPT := bench
bench: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@bench/run.sh

# install, uninstall (PREFIX, DESTDIR), the man pages: mk/install.mk
# image (podman), deb (dpkg-buildpackage): mk/package.mk

format:
	clang-format -i $(FORMAT_SRCS)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# libFuzzer harnesses (clang), on one instrumented copy of the library:
#   make fuzz             build them and fuzz each for FUZZ_TIME s (default 60)
#   make fuzz-bins        only build them (make test does, and fuzzes each a few s)
# (UBSan's findings stop the fuzzer: -fno-sanitize-recover=all, FUZZ_FLAGS)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_TIME ?= 60
FUZZ_LIB_OBJS := $(call objs,$(BUILD)/fuzz/obj,$(LIB_SRCS) $(REPORT_SRCS))
HAVE_CLANG := $(shell command -v $(FUZZ_CC) >/dev/null && echo yes)
.PHONY: fuzz fuzz-bins
fuzz-bins: $(FUZZ_BINS)
fuzz: fuzz-bins
	@for f in $(FUZZ_BINS); do tests/fuzz/run.sh $$f $(FUZZ_TIME) || exit 1; done
$(eval $(call compile_rules,$(BUILD)/fuzz/obj,fuzz))
$(BUILD)/fuzz/libmemlens.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/fuzz/libmemlens.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(BUILD)/fuzz/libmemlens.a $(LDLIBS)

