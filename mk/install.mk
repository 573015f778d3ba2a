# Installation: `make install` / `make uninstall`, the man pages, the bash
# completion and the pkg-config files.
#
#   make                                  also builds the man pages (build/man/)
#   make install [PREFIX=/usr/local] [DESTDIR=...]
#   make uninstall [PREFIX=...] [DESTDIR=...]
#
# install builds only what it installs (memlens, memlens-agent, the
# libraries, the man pages, the pkg-config files), never the tests. Each
# directory can be set on its own (BINDIR, LIBDIR, INCLUDEDIR, LIBEXECDIR,
# DATADIR, MANDIR, PKGCONFIGDIR, BASHCOMPDIR); the lower-case GNU names
# (prefix, bindir, ...) are accepted too. LIBDIR is multiarch
# (lib/x86_64-linux-gnu) where the compiler names its triplet, else lib.
# memlens-agent is a helper program of `memlens agent` (as git's git-*
# helpers): it goes to LIBEXECDIR/memlens, whose path is compiled into
# memlens.

prefix       ?= /usr/local
PREFIX       ?= $(prefix)
MULTIARCH    := $(shell $(CC) -print-multiarch 2>/dev/null)
exec_prefix  ?= $(PREFIX)
bindir       ?= $(exec_prefix)/bin
libdir       ?= $(exec_prefix)/lib$(if $(MULTIARCH),/$(MULTIARCH))
libexecdir   ?= $(exec_prefix)/libexec
includedir   ?= $(PREFIX)/include
datadir      ?= $(PREFIX)/share
mandir       ?= $(datadir)/man
BINDIR       ?= $(bindir)
LIBDIR       ?= $(libdir)
LIBEXECDIR   ?= $(libexecdir)
INCLUDEDIR   ?= $(includedir)
DATADIR      ?= $(datadir)
MANDIR       ?= $(mandir)
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(DATADIR)/bash-completion/completions
MEMLENS_LIBEXEC := $(LIBEXECDIR)/memlens
# libmemlens-sample.so, the sampler `leaks --sample -- CMD` preloads
# (mk/bpf.mk): its path is compiled into memlens too
MEMLENS_SAMPLERDIR := $(LIBDIR)/memlens
INSTALL      ?= install

MEMLENS_VERSION_STR := $(VERSION)

# --- where memlens finds memlens-agent -------------------------------------
# $(BUILD)/gen/install_paths.h is rewritten only when a path changes, so a
# new PREFIX rebuilds only what names the paths (src/cmd_agent.c, the man
# pages).
PATHS_H := $(BUILD)/gen/install_paths.h
# the objects that include it
$(BUILD)/src/cmd_agent.o $(BUILD)/src/cmd_check.o $(BUILD)/src/trace/leaks.o: $(PATHS_H)
.PHONY: FORCE
$(PATHS_H): FORCE
	@mkdir -p $(dir $@)
	@printf '#define MEMLENS_LIBEXECDIR "%s"\n#define MEMLENS_DATADIR "%s"\n#define MEMLENS_SAMPLERDIR "%s"\n' \
		'$(MEMLENS_LIBEXEC)' '$(MEMLENS_DATA)' '$(MEMLENS_SAMPLERDIR)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# --- man pages (doc/man/*.rst, reStructuredText, rst2man of python3-docutils)
RST2MAN   ?= $(shell command -v rst2man 2>/dev/null || command -v rst2man.py 2>/dev/null)
MAN_RST   := $(wildcard doc/man/*.8.rst)
MAN_PAGES := $(MAN_RST:doc/man/%.rst=$(BUILD)/man/%)
.PHONY: man
man: $(MAN_PAGES)
ifneq ($(RST2MAN),)
EXTRA_TARGETS += $(MAN_PAGES)
else
$(warning man pages left out: install python3-docutils (rst2man), scripts/packages/docs.txt)
endif
# rst2man stops at the first warning: a page that does not parse cleanly
# is a build error, not a page with a hole in it (no pipe between the
# steps: sh has no pipefail, and a pipe hid rst2man's failure behind an
# empty page). No hyphenation (.nh): an
# option is never split at a line end.
$(BUILD)/man/%.8: doc/man/%.8.rst mk/install.mk $(PATHS_H)
	@mkdir -p $(dir $@)
	@test -n "$(RST2MAN)" || { echo "$@: rst2man not found: install python3-docutils" >&2; exit 1; }
	sed -e 's/@VERSION@/$(MEMLENS_VERSION_STR)/g' -e 's|@LIBEXECDIR@|$(MEMLENS_LIBEXEC)|g' \
		-e 's|@DATADIR@|$(MEMLENS_DATA)|g' -e 's|@SAMPLERDIR@|$(MEMLENS_SAMPLERDIR)|g' $< > $@.rst
	$(RST2MAN) --halt=warning --no-generator --no-datestamp $@.rst $@.roff
	sed '/^\.TH /a .nh' $@.roff > $@.tmp
	@rm -f $@.rst $@.roff
	@mv $@.tmp $@

# --- pkg-config -------------------------------------------------------------
PC_FILES := $(BUILD)/memlens.pc $(BUILD)/memlens-report.pc $(BUILD)/memlens-trace.pc
$(BUILD)/memlens.pc: lib/memlens.pc.in FORCE
$(BUILD)/memlens-report.pc: report/memlens-report.pc.in FORCE
$(BUILD)/memlens-trace.pc: trace/memlens-trace.pc.in FORCE
# what libmemlens-trace.a needs besides libmemlens, by pkg-config name: libbpf
# and libelf, zlib (TRACE_LDLIBS), and those of the parts this build has
# (mk/pprof.mk: protobuf-c for the pprof profiles, libdw for source lines and
# DWARF stacks)
TRACE_PC_PRIVATE := libbpf libelf zlib $(if $(filter yes,$(PPROF_OK)),libprotobuf-c) \
	$(if $(filter yes,$(LIBDW_OK)),libdw)
$(PC_FILES):
	@mkdir -p $(dir $@)
	@sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(MEMLENS_VERSION_STR)|g' \
		-e 's|@REQUIRES_PRIVATE@|$(strip $(TRACE_PC_PRIVATE))|g' $< > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# --- install / uninstall ----------------------------------------------------
INSTALL_BINS := $(BUILD)/memlens $(filter $(BUILD)/memlens-agent,$(EXTRA_TARGETS)) \
	$(filter $(BUILD)/$(SAMPLER_SO),$(EXTRA_TARGETS))
INSTALL_LIBS := $(BUILD)/libmemlens.a $(BUILD)/libmemlens-report.a $(BUILD)/libmemlens-trace.a
# libmemlens.so (mk/shared.mk): installed as
# libmemlens.so.N, its soname, with the libmemlens.so link for the linker
INSTALL_SO   := $(BUILD)/libmemlens.so
SO_NAME       = libmemlens.so.$(SHARED_VERSION)
INSTALL_HDRS := $(wildcard include/memlens/*.h)
COMPLETION   := scripts/bash-completion/memlens
# the agent's wire contract, for the clients' stubs
MEMLENS_DATA := $(DATADIR)/memlens
INSTALL_DATA := proto/agent.proto
# memlens's patches to CRIU (GPL-2.0, as CRIU): what a CRIU leaving hot
# memory out page by page is built from (memlens check names them)
INSTALL_PATCHES := $(wildcard criu/patches/*.patch)

.PHONY: install uninstall install-bin install-lib install-doc
install: install-bin install-lib install-doc

install-bin: $(INSTALL_BINS)
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0755 $(BUILD)/memlens $(DESTDIR)$(BINDIR)/memlens
ifneq ($(filter $(BUILD)/memlens-agent,$(INSTALL_BINS)),)
	$(INSTALL) -d $(DESTDIR)$(MEMLENS_LIBEXEC)
	$(INSTALL) -m 0755 $(BUILD)/memlens-agent $(DESTDIR)$(MEMLENS_LIBEXEC)/memlens-agent
endif
ifneq ($(filter $(BUILD)/$(SAMPLER_SO),$(INSTALL_BINS)),)
	$(INSTALL) -d $(DESTDIR)$(MEMLENS_SAMPLERDIR)
	$(INSTALL) -m 0644 $(BUILD)/$(SAMPLER_SO) $(DESTDIR)$(MEMLENS_SAMPLERDIR)/$(SAMPLER_SO)
endif
	$(INSTALL) -d $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0644 $(COMPLETION) $(DESTDIR)$(BASHCOMPDIR)/memlens

install-lib: $(INSTALL_LIBS) $(INSTALL_SO) $(PC_FILES)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR)/memlens
	$(INSTALL) -m 0644 $(INSTALL_LIBS) $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 0755 $(INSTALL_SO) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libmemlens.so
	$(INSTALL) -m 0644 $(PC_FILES) $(DESTDIR)$(PKGCONFIGDIR)/
	$(INSTALL) -m 0644 $(INSTALL_HDRS) $(DESTDIR)$(INCLUDEDIR)/memlens/

install-doc: $(MAN_PAGES)
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MEMLENS_DATA) $(DESTDIR)$(MEMLENS_DATA)/criu-patches
	$(INSTALL) -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 0644 $(INSTALL_DATA) $(DESTDIR)$(MEMLENS_DATA)/
	$(INSTALL) -m 0644 $(INSTALL_PATCHES) $(DESTDIR)$(MEMLENS_DATA)/criu-patches/

# removes exactly what install put there and memlens's own directories
# (include/memlens, libexec/memlens); into a DESTDIR (a staging tree) also
# every directory that install created and that is empty now
INSTALL_DIRS := $(BINDIR) $(PKGCONFIGDIR) $(LIBDIR) $(INCLUDEDIR) $(LIBEXECDIR) \
	$(MANDIR)/man8 $(BASHCOMPDIR)
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/memlens $(DESTDIR)$(MEMLENS_LIBEXEC)/memlens-agent \
		$(DESTDIR)$(MEMLENS_SAMPLERDIR)/$(SAMPLER_SO) \
		$(DESTDIR)$(BASHCOMPDIR)/memlens \
		$(INSTALL_LIBS:$(BUILD)/%=$(DESTDIR)$(LIBDIR)/%) \
		$(DESTDIR)$(LIBDIR)/$(SO_NAME) $(DESTDIR)$(LIBDIR)/libmemlens.so \
		$(PC_FILES:$(BUILD)/%=$(DESTDIR)$(PKGCONFIGDIR)/%) \
		$(INSTALL_HDRS:include/%=$(DESTDIR)$(INCLUDEDIR)/%) \
		$(MAN_RST:doc/man/%.rst=$(DESTDIR)$(MANDIR)/man8/%) \
		$(INSTALL_DATA:proto/%=$(DESTDIR)$(MEMLENS_DATA)/%) \
		$(INSTALL_PATCHES:criu/patches/%=$(DESTDIR)$(MEMLENS_DATA)/criu-patches/%)
	@for d in $(DESTDIR)$(INCLUDEDIR)/memlens $(DESTDIR)$(MEMLENS_LIBEXEC) $(DESTDIR)$(MEMLENS_SAMPLERDIR) \
		$(DESTDIR)$(MEMLENS_DATA)/criu-patches $(DESTDIR)$(MEMLENS_DATA); do \
		if [ -d $$d ]; then rmdir $$d || exit 1; fi; done
ifneq ($(DESTDIR),)
	@for d in $(INSTALL_DIRS); do \
		d=$(DESTDIR)$$d; \
		while [ "$$d" != "$(DESTDIR)" ] && [ "$$d" != / ] && rmdir "$$d" 2>/dev/null; do \
			d=$$(dirname "$$d"); done; done
endif
