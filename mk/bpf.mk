# eBPF tracers (memlens faults|slab|leaks|oom): libbpf CO-RE.
#   trace/<tool>.bpf.c --clang -target bpf--> $(BUILD)/bpf/<tool>.bpf.o
#                      --bpftool gen skeleton--> $(BUILD)/gen/<tool>.skel.h
# vmlinux.h comes from the running kernel's BTF (/sys/kernel/btf/vmlinux),
# or from VMLINUX_BTF=<vmlinux or BTF file>. A vmlinux.h put into trace/ wins.
# Where there is no BTF at all, the checked-in trace/vmlinux.h.xz (6.18,
# x86_64; 2.8 MB uncompressed) is used: CO-RE relocates its field offsets to
# the kernel the programs are loaded on.
BPF_CLANG   ?= clang
BPF_STRIP   ?= $(shell command -v llvm-strip 2>/dev/null || echo llvm-strip)
BPFTOOL     ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
VMLINUX_BTF ?= $(wildcard /sys/kernel/btf/vmlinux)
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/riscv64/riscv/' -e 's/s390x/s390/')

BPF_PROG_SRCS := $(wildcard trace/*.bpf.c)
BPF_PROG_OBJS := $(BPF_PROG_SRCS:trace/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
BPF_SKELS     := $(BPF_PROG_SRCS:trace/%.bpf.c=$(BUILD)/gen/%.skel.h)
VMLINUX_H     := $(BUILD)/gen/vmlinux.h

.SECONDARY: $(BPF_PROG_OBJS)
# the tracers' user side: trace/*.c, the library libmemlens-trace.a (what
# memlens and the agent link), and src/trace/*.c, memlens's commands
# (their options and what they print)
TRACE_SRCS     := $(filter-out %.bpf.c,$(wildcard trace/*.c))
TRACE_LDLIBS   := -lbpf -lelf -lz
MEMLENS_SRCS   += $(wildcard src/trace/*.c)
MEMLENS_LIBS   += $(BUILD)/libmemlens-trace.a
MEMLENS_LDLIBS += $(TRACE_LDLIBS)

# The BTF is an order-only prerequisite: sysfs gives its file a new mtime
# whenever its inode is evicted (drop_caches), which would rebuild every BPF
# object each time; CO-RE relocates to the running kernel anyway.
$(VMLINUX_H): $(wildcard trace/vmlinux.h) | $(VMLINUX_BTF)
	@mkdir -p $(dir $@)
	@if [ -f trace/vmlinux.h ]; then cp trace/vmlinux.h $@.tmp; \
	elif [ -n "$(VMLINUX_BTF)" ]; then $(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp; \
	elif [ -f trace/vmlinux.h.xz ] && [ "$(BPF_ARCH)" = x86 ]; then \
		echo "bpf.mk: no kernel BTF here: using the checked-in trace/vmlinux.h.xz" >&2; \
		xz -dc trace/vmlinux.h.xz > $@.tmp; \
	else echo "bpf.mk: no kernel BTF (/sys/kernel/btf/vmlinux) to generate vmlinux.h from;" \
		"set VMLINUX_BTF=<vmlinux or BTF file> or put a vmlinux.h in trace/" >&2; exit 1; fi
	@mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: trace/%.bpf.c trace/%.h trace/common.bpf.h $(VMLINUX_H)
	@mkdir -p $(dir $@)
	$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
		-I$(BUILD)/gen -Itrace -c $< -o $@

# the objects that include a skeleton: only these wait for bpftool (no
# object of libmemlens.a, and no other one of libmemlens-trace.a)
$(BUILD)/trace/faults.o: $(BUILD)/gen/faults.skel.h
$(BUILD)/trace/leakload.o $(BUILD)/trace/leaks.o: $(BUILD)/gen/leaks.skel.h
$(BUILD)/trace/oom.o: $(BUILD)/gen/oom.skel.h
$(BUILD)/trace/slab.o $(BUILD)/trace/probe.o: $(BUILD)/gen/slab.skel.h

# the skeleton embeds the object without its DWARF (llvm-strip -g keeps the
# BTF and the CO-RE relocations): the objects shrink ~25 times, memlens too

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPF_STRIP) -g -o $(BUILD)/bpf/$*.stripped.bpf.o $<
	$(BPFTOOL) gen skeleton $(BUILD)/bpf/$*.stripped.bpf.o name $*_bpf > $@.tmp
	@mv $@.tmp $@

# libmemlens-sample.so: the sampler `leaks --sample BYTES -- CMD` preloads
# into CMD (trace/preload/sample.c). Its own flags, not CFLAGS: it goes into
# any program, so never with a sanitizer; frame pointers, and no sibling
# calls, so that the frames the BPF program skips above its markers are
# always the same ones (trace/leaks.h, LEAKS_PRELOAD_SKIP_*). Installed in
# $(libdir)/memlens, whose path memlens is built with.
SAMPLER_SO := libmemlens-sample.so
SAMPLER_FLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fPIC -shared \
	-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls \
	-fvisibility=hidden -ftls-model=initial-exec -Itrace
EXTRA_TARGETS += $(BUILD)/$(SAMPLER_SO)
$(BUILD)/$(SAMPLER_SO): trace/preload/sample.c trace/preload/expo.h trace/leaks.h
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLER_FLAGS) $(CPPFLAGS) $(LDFLAGS) -Wl,-z,nodelete -Wl,--as-needed -o $@ $< -ldl
