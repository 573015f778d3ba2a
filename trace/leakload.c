// SPDX-License-Identifier: MIT
/*
 * The leak tracer's loading (leakload.h): the allocator's entry points
 * found in its ELF symbols, the programs loaded and their uprobes attached
 * (a uprobe session, uprobe_multi links, or one perf-event uprobe each, as
 * the kernel allows), and detached again in parallel.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "memlens/alloc_sample.h"
#include "memlens/clock.h"
#include "allocfind.h"
#include "bpfutil.h"
#include "elfsym.h"
#include "leakload.h"
#include "preload.h"

#include "umulti.h"
#include "leaks.h"
#include "leaks.skel.h"

_Static_assert(LEAKS_NR_MARKS == 2, "struct leaks_loader's marker_lo");

/* with -v: what the caller's say() is given (nothing without it) */
#define SAY(o, ...)                                                                                \
	do {                                                                                       \
		if ((o)->say)                                                                      \
			(o)->say((o)->say_arg, __VA_ARGS__);                                       \
	} while (0)

/*
 * The entry points probed, by name, each with the function whose arguments
 * it takes (enum leaks_fn): the standard names, jemalloc's and tcmalloc's
 * prefixed ones (a program that links them with a prefix calls je_malloc or
 * tc_malloc itself), and their own API with the same arguments (jemalloc's
 * mallocx(size, flags), rallocx(ptr, size, flags), dallocx(ptr, flags),
 * sdallocx(ptr, size, flags); C23's free_sized). Those an object exports
 * at one address (tcmalloc's malloc and tc_malloc) are probed once.
 */
static const struct probe_name {
	const char *name;
	int fn; /* enum leaks_fn, or LEAKS_FREE */
} probe_names[] = {
	{ "malloc", LEAKS_MALLOC },
	{ "je_malloc", LEAKS_MALLOC },
	{ "tc_malloc", LEAKS_MALLOC },
	{ "mallocx", LEAKS_MALLOC },
	{ "je_mallocx", LEAKS_MALLOC },
	{ "calloc", LEAKS_CALLOC },
	{ "je_calloc", LEAKS_CALLOC },
	{ "tc_calloc", LEAKS_CALLOC },
	{ "realloc", LEAKS_REALLOC },
	{ "je_realloc", LEAKS_REALLOC },
	{ "tc_realloc", LEAKS_REALLOC },
	{ "rallocx", LEAKS_REALLOC },
	{ "je_rallocx", LEAKS_REALLOC },
	{ "reallocarray", LEAKS_REALLOCARRAY },
	{ "aligned_alloc", LEAKS_ALIGNED_ALLOC },
	{ "je_aligned_alloc", LEAKS_ALIGNED_ALLOC },
	{ "posix_memalign", LEAKS_POSIX_MEMALIGN },
	{ "je_posix_memalign", LEAKS_POSIX_MEMALIGN },
	{ "tc_posix_memalign", LEAKS_POSIX_MEMALIGN },
	{ "memalign", LEAKS_MEMALIGN },
	{ "je_memalign", LEAKS_MEMALIGN },
	{ "tc_memalign", LEAKS_MEMALIGN },
	{ "valloc", LEAKS_VALLOC },
	{ "je_valloc", LEAKS_VALLOC },
	{ "tc_valloc", LEAKS_VALLOC },
	{ "pvalloc", LEAKS_PVALLOC },
	{ "tc_pvalloc", LEAKS_PVALLOC },
	{ "free", LEAKS_FREE },
	{ "je_free", LEAKS_FREE },
	{ "tc_free", LEAKS_FREE },
	{ "cfree", LEAKS_FREE },
	{ "tc_cfree", LEAKS_FREE },
	{ "free_sized", LEAKS_FREE },
	{ "free_aligned_sized", LEAKS_FREE },
	{ "dallocx", LEAKS_FREE },
	{ "je_dallocx", LEAKS_FREE },
	{ "sdallocx", LEAKS_FREE },
	{ "je_sdallocx", LEAKS_FREE },
};

#define NR_PROBE_NAMES (sizeof(probe_names) / sizeof(probe_names[0]))
_Static_assert(NR_PROBE_NAMES == LEAKS_NR_PROBE_NAMES, "leakload.h counts the names");
#define MAX_PROBES LEAKS_MAX_PROBES

/* file offsets to probe in @path, each with its cookie (enum leaks_fn) */
struct probe_set {
	const char *path;
	uint64_t off[MAX_PROBES];
	uint64_t cookie[MAX_PROBES];
	unsigned int n;
};

#define MAX_OBJS LEAKS_MAX_OBJS
#define MAX_LINKS LEAKS_MAX_LINKS

/*
 * x86-64: a uprobe on "test %rdi,%rdi" is single-stepped (slow); the push
 * after "test %rdi,%rdi; je" is emulated, every non-NULL call passes it and
 * %rdi still holds the argument there. Use it when the prologue is that.
 */
static uint64_t emulatable_entry(const char *path, uint64_t off)
{
#ifdef __x86_64__
	unsigned char b[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC), next = 0;
	ssize_t n;

	if (fd < 0)
		return off;
	n = pread(fd, b, sizeof(b), (off_t)off);
	close(fd);
	if (n != sizeof(b) || b[0] != 0x48 || b[1] != 0x85 || b[2] != 0xff)
		return off;
	if (b[3] == 0x74)
		next = 5;
	else if (b[3] == 0x0f && b[4] == 0x84)
		next = 9;
	if (next && b[next] >= 0x50 && b[next] <= 0x57)
		return off + (uint64_t)next;
	if (next && b[next] == 0x41 && b[next + 1] >= 0x50 && b[next + 1] <= 0x57)
		return off + (uint64_t)next;
#else
	(void)path;
#endif
	return off;
}

static void add_probe(struct probe_set *ps, uint64_t off, int fn)
{
	ps->off[ps->n] = off;
	ps->cookie[ps->n++] = (uint64_t)fn;
}

/*
 * glibc's thread-exit path (see leaks.bpf.c): __call_tls_dtors, which a
 * thread calls before its tcache is flushed. Not there (musl, an old glibc):
 * those frees count as untracked, and -v says so.
 */
static void find_thread_exit(const struct leaks_loader *r, const struct elf_syms *syms,
			     struct probe_set *entries, const struct leaks_load_opts *o)
{
	uint64_t va, off;

	if (r->alloc->is_libc && !mlt_elf_syms_find(syms, "__call_tls_dtors", &va) &&
	    !mlt_elf_vaddr_to_off(syms, va, &off)) {
		add_probe(entries, off, LEAKS_THREAD_EXIT);
		SAY(o,
		    "uprobe __call_tls_dtors at 0x%llx (thread exit: "
		    "frees of glibc's per-thread cache are exit_frees)\n",
		    (unsigned long long)off);
	} else if (r->alloc->is_libc) {
		SAY(o, "no __call_tls_dtors in the C library: blocks its "
		       "per-thread cache frees at thread exit count as untracked_frees\n");
	}
}

/*
 * The probes of @path: every entry point it has, each probed once; @main:
 * the allocator malloc is bound to (else one beside it, with prefixed
 * names only).
 */
static int find_probes(struct leaks_loader *r, const struct leaks_load_opts *o, const char *path,
		       bool main, struct probe_set *entries, struct probe_set *returns,
		       struct ml_err *err)
{
	uint64_t seen[NR_PROBE_NAMES];
	bool have_malloc = false, have_free = false;
	struct elf_syms syms;
	int nseen = 0, e;

	entries->path = returns->path = path;
	e = mlt_elf_syms_load(path, &syms, err);
	if (e)
		return e;
	for (size_t i = 0; i < NR_PROBE_NAMES; i++) {
		const struct probe_name *pn = &probe_names[i];
		bool alloc = pn->fn != LEAKS_FREE, dup = false;
		uint64_t va, off, entry;

		if (mlt_elf_syms_find(&syms, pn->name, &va) ||
		    mlt_elf_vaddr_to_off(&syms, va, &off))
			continue;
		for (int k = 0; k < nseen; k++)
			dup |= seen[k] == off;
		if (dup) /* an alias (aligned_alloc = memalign): probed once */
			continue;
		seen[nseen++] = off;
		have_malloc |= pn->fn == LEAKS_MALLOC;
		have_free |= pn->fn == LEAKS_FREE;
		entry = alloc || o->free_at_entry ? off : emulatable_entry(path, off);
		add_probe(entries, entry, pn->fn);
		if (alloc)
			add_probe(returns, off, pn->fn);
		SAY(o, "uprobe%s %s at 0x%llx%s%s%s\n", alloc ? "+uretprobe" : "", pn->name,
		    (unsigned long long)entry, main ? "" : " of ", main ? "" : path,
		    entry != off ? " (past 'test %rdi,%rdi; je': an emulated push "
				   "instead of a single-stepped test)"
				 : "");
	}
	if (!have_malloc || !have_free)
		e = ml_err_set(err, ENOENT,
			       "%s has no function %s (nor je_%s, tc_%s): not an allocator "
			       "memlens leaks can trace",
			       path, have_malloc ? "free" : "malloc",
			       have_malloc ? "free" : "malloc", have_malloc ? "free" : "malloc");
	else if (main)
		find_thread_exit(r, &syms, entries, o);
	mlt_elf_syms_free(&syms);
	return e;
}

/*
 * The preloaded sampler's two markers (trace/preload/sample.c), each with
 * its cookie (enum leaks_marker), in @entries.
 */
static int find_markers(struct leaks_loader *r, const struct leaks_load_opts *o, const char *path,
			struct probe_set *entries, struct ml_err *err)
{
	static const char *const names[LEAKS_NR_MARKS] = {
		[LEAKS_MARK_SAMPLED] = "mls_sampled",
		[LEAKS_MARK_FREED] = "mls_freed",
	};
	struct elf_syms syms;
	int e;

	entries->path = path;
	e = mlt_elf_syms_load(path, &syms, err);
	if (e)
		return e;
	for (int i = 0; i < LEAKS_NR_MARKS && !e; i++) {
		uint64_t va, off;

		if (mlt_elf_syms_find(&syms, names[i], &va) ||
		    mlt_elf_vaddr_to_off(&syms, va, &off))
			e = ml_err_set(err, ENOENT,
				       "%s has no function %s: not memlens's sampler (rebuild "
				       "memlens, or use --sampler uprobe)",
				       path, names[i]);
		else {
			if (i == LEAKS_MARK_SAMPLED)
				r->sampler_sym = va;
			r->marker_lo[i] = (uint32_t)(va & (LEAKS_PAGE - 1));
			add_probe(entries, off, i);
			SAY(o, "uprobe %s at 0x%llx of %s\n", names[i], (unsigned long long)off,
			    path);
		}
	}
	mlt_elf_syms_free(&syms);
	/* the program tells them apart by their pc's offset in its page */
	if (!e && r->marker_lo[LEAKS_MARK_SAMPLED] == r->marker_lo[LEAKS_MARK_FREED])
		e = ml_err_set(err, ENOEXEC,
			       "%s: mls_sampled and mls_freed lie a multiple of %d bytes apart: "
			       "not memlens's sampler (rebuild memlens, or use --sampler uprobe)",
			       path, LEAKS_PAGE);
	if (!e && mlt_preload_image_end(path, &r->sampler_end))
		e = ml_err_set(err, ENOEXEC, "%s: no loadable segment: not memlens's sampler",
			       path);
	return e;
}

static int attach_perf(struct leaks_loader *r, struct bpf_program *p, pid_t pid,
		       const struct probe_set *ps, bool ret)
{
	for (unsigned int i = 0; i < ps->n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret, .bpf_cookie = ps->cookie[i]);
		struct bpf_link *l;

		l = bpf_program__attach_uprobe_opts(p, pid, ps->path, (size_t)ps->off[i], &uo);
		if (!l)
			return -errno;
		r->links[r->nlinks++] = l;
	}
	return 0;
}

static int attach_multi(struct leaks_loader *r, struct bpf_program *p, pid_t pid,
			const struct probe_set *ps, bool ret)
{
	int fd = mlt_umulti_attach(bpf_program__fd(p), ps->path, ps->off, ps->cookie, ps->n, ret,
				   pid);

	if (fd < 0)
		return fd;
	r->link_fds[r->nlink_fds++] = fd;
	return 0;
}

/*
 * Return probes before entry probes: an entry seen without its return
 * probe would leave a call record that never ends. Nothing is counted
 * until all are attached (armed), so tracing begins at one instant for
 * every entry point and every thread: a call under way then is not
 * counted (unpaired_returns when only its return is seen).
 */
static int attach_probes(struct leaks_loader *r, pid_t pid, const struct probe_set *entries,
			 const struct probe_set *returns, int nobj)
{
	int (*attach)(struct leaks_loader *, struct bpf_program *, pid_t, const struct probe_set *,
		      bool) = r->multi ? attach_multi : attach_perf;
	int e = 0, fd;

	if (r->preload) { /* the sampler's markers: entries only */
		e = attach(r, r->skel->progs.marker, pid, &entries[0], false);
		if (!e)
			r->skel->bss->armed = true;
		return e;
	}
	for (int i = 0; r->session && i < nobj; i++) { /* one link each: entries and returns */
		fd = mlt_umulti_attach_session(bpf_program__fd(r->skel->progs.fn_session),
					       entries[i].path, entries[i].off, entries[i].cookie,
					       entries[i].n, pid);
		if (fd < 0)
			return fd;
		r->link_fds[r->nlink_fds++] = fd;
	}
	for (int i = 0; !r->session && !e && i < nobj; i++)
		e = attach(r, r->skel->progs.alloc_exit, pid, &returns[i], true);
	for (int i = 0; !r->session && !e && i < nobj; i++)
		e = attach(r, r->skel->progs.fn_enter, pid, &entries[i], false);
	if (!e)
		r->skel->bss->armed = true;
	return e;
}

static void *destroy_link(void *l)
{
	bpf_link__destroy(l);
	return NULL;
}

static void *close_link_fd(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

/*
 * Each uprobe's removal waits for the kernel's grace periods: a
 * uprobe_multi link waits once for all its probes, a perf-event uprobe once
 * per probe. The links are removed in parallel, which helps where the
 * kernel does not serialise the removals.
 */
void mlt_leaks_detach(struct leaks_loader *r)
{
	pthread_t th[MAX_LINKS + 2];
	bool started[MAX_LINKS + 2];
	int n = 0;

	for (int i = 0; i < r->nlink_fds; i++, n++)
		started[n] = !pthread_create(&th[n], NULL, close_link_fd,
					     (void *)(intptr_t)r->link_fds[i]);
	for (int i = 0; i < r->nlinks; i++, n++)
		started[n] = !pthread_create(&th[n], NULL, destroy_link, r->links[i]);
	n = 0;
	for (int i = 0; i < r->nlink_fds; i++, n++)
		if (started[n])
			pthread_join(th[n], NULL);
		else
			close(r->link_fds[i]);
	for (int i = 0; i < r->nlinks; i++, n++)
		if (started[n])
			pthread_join(th[n], NULL);
		else
			bpf_link__destroy(r->links[i]);
	r->nlinks = 0;
	r->nlink_fds = 0;
}

/*
 * The ring buffer of stack copies: room for 1024 of them (a burst of
 * allocations while user space unwinds), a power of two; one page unused.
 */
static __u32 samples_bytes(const struct leaks_load_opts *o)
{
	__u32 want = 1024 * (__u32)(sizeof(struct leaks_sample) +
				    leaks_stack_room((__u32)o->stack_size) + 8),
	      b = 4096;

	if (!o->dwarf)
		return (__u32)sysconf(_SC_PAGESIZE);
	while (b < want)
		b <<= 1;
	return b;
}

/*
 * The byte offset of member @name in the composite type @id of @btf,
 * looked for through anonymous members too; -1 if there is none.
 */
static long btf_member_off(const struct btf *btf, __u32 id, const char *name, int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_composite(t) || depth > 4)
		return -1;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		long bits = (long)btf_member_bit_offset(t, i), in;

		if (n && *n && !strcmp(n, name))
			return bits / 8;
		if ((!n || !*n) && (in = btf_member_off(btf, m->type, name, depth + 1)) >= 0)
			return bits / 8 + in;
	}
	return -1;
}

/*
 * --stacks dwarf: where this kernel keeps vm_area_struct's vm_end, for the
 * program to read it without a CO-RE relocation (leaks.bpf.c): only this
 * mode loads the kernel's BTF. 0, or -errno.
 */
static int vm_end_offset(__u32 *off)
{
	struct btf *btf = btf__load_vmlinux_btf();
	long o = -1;
	int id;

	if (!btf)
		return -errno;
	id = btf__find_by_name_kind(btf, "vm_area_struct", BTF_KIND_STRUCT);
	if (id > 0)
		o = btf_member_off(btf, (__u32)id, "vm_end", 0);
	btf__free(btf);
	if (o < 0)
		return -ENOENT;
	*off = (__u32)o;
	return 0;
}

static int load_and_attach(struct leaks_loader *r, const struct leaks_load_opts *o, pid_t pid,
			   const struct probe_set *entries, const struct probe_set *returns,
			   int nobj)
{
	int e;

	r->skel = leaks_bpf__open();
	if (!r->skel)
		return -errno;
	r->skel->rodata->vm_end_off = r->vm_end_off;
	r->skel->rodata->target_tgid = (__u32)pid;
	r->skel->rodata->with_stacks = !o->no_stacks;
	r->skel->rodata->sample_mean = o->sample;
	r->skel->rodata->session = r->session;
	r->skel->rodata->sampler_sym = r->preload ? r->sampler_sym : 0;
	r->skel->rodata->sampler_end = r->preload ? r->sampler_end : 0;
	for (int i = 0; r->preload && i < LEAKS_NR_MARKS; i++)
		r->skel->rodata->marker_lo[i] = r->marker_lo[i];
	r->skel->rodata->dwarf = o->dwarf;
	r->skel->rodata->dwarf_stack_size = (__u32)o->stack_size;
	r->skel->rodata->dwarf_stack_room = leaks_stack_room((__u32)o->stack_size);
	bpf_map__set_max_entries(r->skel->maps.samples, samples_bytes(o));
	r->skel->rodata->samples_wake = o->dwarf ? samples_bytes(o) / 4 : 0;
	if (o->sample) {
		uint64_t tab[LEAKS_EXPO_N + 1];

		ml_alloc_sample_expo_table(tab, LEAKS_EXPO_N);
		for (int j = 0; j <= LEAKS_EXPO_N; j++)
			r->skel->rodata->expo_tab[j] = tab[j];
	}
	bpf_program__set_autoload(r->skel->progs.fn_session, r->session);
	bpf_program__set_autoload(r->skel->progs.fn_enter, !r->session && !r->preload);
	bpf_program__set_autoload(r->skel->progs.alloc_exit, !r->session && !r->preload);
	bpf_program__set_autoload(r->skel->progs.marker, r->preload);
	if (r->session)
		bpf_program__set_expected_attach_type(r->skel->progs.fn_session,
						      UMULTI_SESSION_ATTACH_TYPE);
	mlt_trace_pidns(&r->skel->rodata->pidns_dev, &r->skel->rodata->pidns_ino);
	bpf_map__set_max_entries(
		r->skel->maps.allocs,
		(__u32)(o->max_blocks ? (uint64_t)o->max_blocks : leaks_default_blocks(o->sample)));
	/*
	 * Sampled, the table holds few blocks: its entries are allocated as
	 * blocks are recorded rather than all at its creation (a million of
	 * them take ~25 ms and ~90 MB of kernel memory).
	 */
	if (o->sample)
		bpf_map__set_map_flags(r->skel->maps.allocs,
				       bpf_map__map_flags(r->skel->maps.allocs) |
					       BPF_F_NO_PREALLOC);
	if (o->max_stacks)
		bpf_map__set_max_entries(r->skel->maps.stacks, (__u32)o->max_stacks);
	if (r->multi && r->preload)
		bpf_program__set_expected_attach_type(r->skel->progs.marker, UMULTI_ATTACH_TYPE);
	else if (r->multi && !r->session) {
		bpf_program__set_expected_attach_type(r->skel->progs.fn_enter, UMULTI_ATTACH_TYPE);
		bpf_program__set_expected_attach_type(r->skel->progs.alloc_exit,
						      UMULTI_ATTACH_TYPE);
	}
	e = leaks_bpf__load(r->skel);
	if (!e)
		e = attach_probes(r, pid, entries, returns, nobj);
	return e;
}

void mlt_leaks_unload(struct leaks_loader *r)
{
	mlt_leaks_detach(r);
	ring_buffer__free(r->rb);
	r->rb = NULL;
	mlt_unwinder_free(r->unw);
	r->unw = NULL;
	mlt_stackstore_free(&r->store);
	leaks_bpf__destroy(r->skel);
	r->skel = NULL;
}

/*
 * uprobe_multi links first (kernel 6.6+); a kernel without them refuses
 * the link (EINVAL, EOPNOTSUPP...) and the programs are loaded again for
 * one perf-event uprobe per probe.
 */
int mlt_leaks_load(struct leaks_loader *r, const struct leaks_load_opts *o,
		   const struct alloc_lib *alloc, pid_t pid, struct ml_err *err)
{
	struct probe_set entries[MAX_OBJS] = { { .n = 0 } }, returns[MAX_OBJS] = { { .n = 0 } };
	unsigned int nent = 0, nret = 0;
	int e, nobj = 1;

	r->o = o;
	r->alloc = alloc;
	r->dwarf = o->dwarf;
	e = o->dwarf ? vm_end_offset(&r->vm_end_off) : 0;
	if (e)
		return ml_err_set(err, -e,
				  "--stacks dwarf: vm_area_struct's vm_end is not in the kernel's "
				  "BTF (/sys/kernel/btf/vmlinux): %s; use --stacks fp (a kernel "
				  "built with CONFIG_DEBUG_INFO_BTF=y has it)",
				  strerror(-e));

	r->preload = o->preload;
	if (o->preload)
		e = find_markers(r, o, r->alloc->path, &entries[0], err);
	else
		e = find_probes(r, o, r->alloc->path, true, &entries[0], &returns[0], err);
	if (!e && !o->preload && r->alloc->extra[0])
		e = find_probes(r, o, r->alloc->extra, false, &entries[nobj], &returns[nobj], err);
	if (e)
		return e;
	nobj += !o->preload && r->alloc->extra[0] != 0;
	for (int i = 0; i < nobj; i++) {
		nent += entries[i].n;
		nret += returns[i].n;
	}
	r->multi = !o->perf_uprobes;
	r->session = o->sample && r->multi && !o->preload;
	e = load_and_attach(r, o, pid, entries, returns, nobj);
	if (e && r->session && e != -EPERM && e != -EACCES) {
		SAY(o,
		    "uprobe session refused (%s): two uprobe_multi "
		    "links instead (calls not sampled still take their return "
		    "probe)\n",
		    strerror(-e));
		mlt_leaks_unload(r);
		r->session = false;
		e = load_and_attach(r, o, pid, entries, returns, nobj);
	}
	if (e && r->multi && e != -EPERM && e != -EACCES) {
		SAY(o,
		    "uprobe_multi links refused (%s): one perf-event "
		    "uprobe per probe instead\n",
		    strerror(-e));
		mlt_leaks_unload(r);
		r->multi = false;
		e = load_and_attach(r, o, pid, entries, returns, nobj);
	}
	if (e)
		return mlt_trace_bpf_error(err, e,
					   "loading the leak tracer and attaching its uprobes");
	if (o->preload) {
		SAY(o,
		    "sampler preloaded: %s in pid %d decides which allocations are "
		    "sampled; %s on its 2 markers only\n",
		    r->alloc->path, (int)pid,
		    r->multi ? "one uprobe_multi link" : "perf-event uprobes");
		return 0;
	}
	SAY(o,
	    "mode %s on %s (%s), pid %d: %u entry and %u return "
	    "probes\n",
	    r->session ? "uprobe session (one link)"
	    : r->multi ? "uprobe_multi (two links)"
		       : "perf-event uprobes",
	    r->alloc->path,
	    r->alloc->is_libc ? "its C library" : "its allocator, in place of libc's malloc",
	    (int)pid, nent, nret);
	return 0;
}

/* ---- dwarf: the stack copies, unwound as they come ---- */

static int cmp_seq(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Forget which stack the blocks freed since had: keep the bindings of the
 * blocks the table holds now. A block is in the table before its copy is
 * handed over (trace/leaks.bpf.c), so none bound yet is missed.
 */
static void prune_bindings(struct leaks_loader *r)
{
	size_t n, k = 0;
	struct leaks_alloc *a = mlt_leaks_read_allocs(r, &n);
	uint64_t *live = a ? malloc((n ? n : 1) * sizeof(*live)) : NULL;

	if (live) {
		for (size_t i = 0; i < n; i++)
			if (a[i].stack_id >= 0)
				live[k++] = (uint64_t)a[i].stack_id;
		qsort(live, k, sizeof(*live), cmp_seq);
		mlt_stackstore_keep(&r->store, live, k);
	}
	free(live);
	free(a);
	r->prune_at = 2 * r->store.nbinds > (1u << 20) ? 2 * r->store.nbinds : (1u << 20);
}

/* One stack copy: unwound, its stack stored once, the block bound to it. */
static int on_sample(void *ctx, void *data, size_t len)
{
	static uint64_t ips[LEAKS_DWARF_DEPTH];
	struct leaks_loader *r = ctx;
	const struct leaks_sample *sm = data;
	struct unwind_input in = { 0 };
	enum unwind_end end;
	uint64_t t0;
	int n, id;

	if (len < sizeof(*sm) || len < sizeof(*sm) + sm->size)
		return 0;
	in.tid = (pid_t)sm->tid;
	in.stack = sm->stack;
	in.size = sm->size;
	in.to_end = sm->to_end;
	for (int i = 0; i < UNWIND_NR_REGS; i++)
		in.regs[i] = sm->regs[i];
	t0 = ml_mono_ns();
	n = mlt_unwind_stack(r->unw, &in, ips, LEAKS_DWARF_DEPTH, &end);
	if (!n && r->preload) { /* the pc is mls_sampled's: the sampler is mapped by now */
		mlt_unwinder_stale(r->unw);
		n = mlt_unwind_stack(r->unw, &in, ips, LEAKS_DWARF_DEPTH, &end);
	}
	if (r->preload) { /* the sampler's own frames (leaks.h), its pc at mls_sampled */
		uint64_t base = in.regs[UNWIND_IP] - r->sampler_sym;
		int k = 0;

		while (k < n && k < LEAKS_PRELOAD_MAX_SKIP && ips[k] - base < r->sampler_end)
			k++;
		memmove(ips, ips + k, (size_t)(n - k) * sizeof(*ips));
		n -= k;
	}
	if (!n) { /* its pc in no file known: the caller alone, as frame pointers give */
		ips[0] = in.regs[UNWIND_IP];
		n = 1;
	}
	r->unw_stats.ns += ml_mono_ns() - t0;
	r->unw_stats.stacks++;
	r->unw_stats.frames += (uint64_t)n;
	if ((uint64_t)n > r->unw_stats.max_frames)
		r->unw_stats.max_frames = (uint64_t)n;
	r->unw_stats.ends[end]++;
	id = mlt_stackstore_intern(&r->store, ips, (uint32_t)n);
	if (id == -ENOSPC)
		r->unw_stats.full++;
	if (id >= 0)
		mlt_stackstore_bind(&r->store, sm->seq, (uint32_t)id);
	if (r->store.nbinds >= r->prune_at)
		prune_bindings(r);
	return 0;
}

int mlt_leaks_dwarf_start(struct leaks_loader *r, pid_t pid, size_t max_stacks, struct ml_err *err)
{
	mlt_stackstore_init(&r->store, max_stacks);
	r->prune_at = 1u << 20;
	r->unw = mlt_unwinder_new(pid);
	if (!r->unw)
		return ml_err_set(err, errno,
				  "cannot read the ELF files of process %d to unwind "
				  "its stacks: %s",
				  (int)pid, strerror(errno));
	r->rb = ring_buffer__new(bpf_map__fd(r->skel->maps.samples), on_sample, r, NULL);
	if (!r->rb)
		return ml_err_set(err, errno, "cannot read the ring buffer of stack copies: %s",
				  strerror(errno));
	return 0;
}

/* The return addresses of stack @id, innermost first, at most LEAKS_STACK_MAX: how many. */
int mlt_leaks_stack_ips(struct leaks_loader *r, int64_t id, uint64_t *ips)
{
	struct leaks_stack ls;
	const uint64_t *v;
	int n = 0;

	if (id < 0)
		return 0;
	if (r->dwarf) {
		n = (int)mlt_stackstore_get(&r->store, (uint32_t)id, &v);
		n = n > LEAKS_STACK_MAX ? LEAKS_STACK_MAX : n;
		memcpy(ips, v, (size_t)n * sizeof(*ips));
		return n;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.stacks), &(__u64){ (__u64)id }, &ls))
		return 0;
	for (; n < LEAKS_STACK_DEPTH && ls.ips[n]; n++)
		ips[n] = ls.ips[n];
	return n;
}

struct leaks_alloc *mlt_leaks_read_allocs(const struct leaks_loader *r, size_t *n)
{
	return mlt_trace_map_dump(bpf_map__fd(r->skel->maps.allocs), sizeof(__u64),
				  sizeof(struct leaks_alloc), TRACE_NO_KEY, 0, n);
}

/* the distinct stacks the table holds */
uint64_t mlt_leaks_count_stacks(const struct leaks_loader *r)
{
	int fd = bpf_map__fd(r->skel->maps.stacks);
	__u64 key, next;
	uint64_t n = 0;

	for (int e = bpf_map_get_next_key(fd, NULL, &next); !e;
	     e = bpf_map_get_next_key(fd, &key, &next)) {
		key = next;
		n++;
	}
	return n;
}
