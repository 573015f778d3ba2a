// SPDX-License-Identifier: MIT
/* /proc/PID/maps parsing and classification, on fixed text. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/maps.h"

static const char sample[] =
	"55d0c8a00000-55d0c8a02000 r--p 00000000 fe:00 1311 /usr/bin/prog\n"
	"55d0c8a02000-55d0c8a06000 r-xp 00002000 fe:00 1311 /usr/bin/prog\n"
	"55d0c8a06000-55d0c8a07000 r--p 00006000 fe:00 1311 /usr/bin/prog\n"
	"55d0c8a07000-55d0c8a08000 rw-p 00007000 fe:00 1311 /usr/bin/prog\n"
	"55d0c8a08000-55d0c8a0a000 rw-p 00000000 00:00 0 \n"
	"55d0c9000000-55d0c9021000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
	"7f0000200000-7f0000228000 r--p 00000000 fe:00 2222 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000228000-7f00003bd000 r-xp 00028000 fe:00 2222 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f00003bd000-7f0000415000 r--p 001bd000 fe:00 2222 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000415000-7f0000419000 r--p 00214000 fe:00 2222 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f000041b000-7f0000428000 rw-p 00000000 00:00 0 \n"
	"7f0000500000-7f0000600000 rw-s 00000000 00:01 77 /dev/shm/seg\n"
	"7f0000600000-7f0000700000 r--p 00000000 08:01 99 /data/file with spaces.bin\n"
	"7f0000700000-7f0000710000 rw-s 00000000 00:01 1025 /memfd:buf (deleted)\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd00100000-7ffd00104000 r--p 00000000 00:00 0                          [vvar]\n"
	"7ffd00104000-7ffd00106000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static struct ml_vma_set S;

/*
 * The ELF tails of the sample's files, as their program headers would say:
 * prog's data segment ends its file part at 0x8000 and its memory at
 * 0xa000 (two pages of .bss); libc's (p_vaddr one page above p_offset, as
 * in glibc) at 0x21a800 and 0x227f50.
 */
static const struct ml_elf_tail sample_tails[] = {
	{ .dev_major = 0xfe,
	  .inode = 1311,
	  .vaddr = 0x7010,
	  .offset = 0x7010,
	  .filesz = 0xff0,
	  .memsz = 0x2ff0 },
	{ .dev_major = 0xfe,
	  .inode = 2222,
	  .vaddr = 0x2158d0,
	  .offset = 0x2148d0,
	  .filesz = 0x4f30,
	  .memsz = 0x12680 },
};
static const struct ml_maps_hints sample_hints = { .tails = sample_tails, .ntails = 2 };

static void parse_text(const char *text)
{
	struct ml_err err = { 0 };

	ml_vma_set_init(&S);
	REQUIRE_MSG(ml_maps_parse(text, strlen(text), &S, &err) == 0, "%s", err.msg);
}

static void parse_sample(void)
{
	parse_text(sample);
	ml_maps_classify_hints(&S, "/usr/bin/prog", &sample_hints);
}

static void test_parse_fields(void)
{
	parse_sample();
	CHECK_EQ(S.n, 20);
	CHECK_EQ(S.v[0].start, 0x55d0c8a00000ULL);
	CHECK_EQ(S.v[0].end, 0x55d0c8a02000ULL);
	CHECK_EQ(S.v[1].offset, 0x2000);
	/* hex device numbers: "fe:00" is major 254 */
	CHECK_EQ(S.v[0].dev_major, 0xfe);
	CHECK_EQ(S.v[0].dev_minor, 0);
	CHECK_EQ(S.v[14].dev_major, 8);
	CHECK_EQ(S.v[0].inode, 1311);
	CHECK_STR(S.v[1].perms, "r-xp");
	CHECK_STR(ml_vma_path(&S, &S.v[0]), "/usr/bin/prog");
	CHECK_STR(ml_vma_path(&S, &S.v[4]), "");
	CHECK_STR(ml_vma_path(&S, &S.v[14]), "/data/file with spaces.bin");
	CHECK_EQ(vma_pages(&S.v[5]), 0x21);
	ml_vma_set_free(&S);
}

static void test_classify(void)
{
	static const char *want[] = {
		"text",	    "text",	"text",	    "data",	"bss",	    "heap",	"anon",
		"lib-text", "lib-text", "lib-text", "lib-text", "lib-data", "lib-data", "shm",
		"file",	    "shm",	"stack",    "vvar",	"vdso",	    "vsyscall",
	};

	parse_sample();
	for (size_t i = 0; i < S.n; i++)
		CHECK_STR(ml_vma_kind_name(S.v[i].kind), want[i]);
	ml_vma_set_free(&S);
}

static void test_classify_guesses_exe(void)
{
	parse_text(sample);
	ml_maps_classify_hints(&S, NULL, &sample_hints);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "text");
	CHECK_STR(ml_vma_kind_name(S.v[4].kind), "bss");
	ml_vma_set_free(&S);
}

/* Without the ELF files' tails, no anonymous VMA is taken for a .bss: it is anon. */
static void test_classify_no_hints(void)
{
	parse_text(sample);
	ml_maps_classify(&S, "/usr/bin/prog");
	CHECK_STR(ml_vma_kind_name(S.v[3].kind), "data");
	CHECK_STR(ml_vma_kind_name(S.v[4].kind), "anon");
	CHECK_STR(ml_vma_kind_name(S.v[11].kind), "lib-data");
	CHECK_STR(ml_vma_kind_name(S.v[12].kind), "anon");
	ml_vma_set_free(&S);
}

/*
 * An anonymous VMA right after a library's data is its .bss only where
 * and as long as the ELF tail says: a big buffer that mmap happened to
 * place there (python's 1 GiB bytearray after _ctypes' data) is anon,
 * merged with the .bss or not.
 */
static void test_classify_adjacent_anon(void)
{
	static const char *const texts[] = {
		/* the .bss and a 256 MiB mapping above it, merged into one VMA */
		"7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /lib/libc.so.6\n"
		"7f000041b000-7f001041b000 rw-p 00000000 00:00 0\n",
		/* one page longer than the .bss */
		"7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /lib/libc.so.6\n"
		"7f000041b000-7f0000429000 rw-p 00000000 00:00 0\n",
		/* not where the .bss starts (a page above it) */
		"7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /lib/libc.so.6\n"
		"7f000041c000-7f0000428000 rw-p 00000000 00:00 0\n",
		/* another file, whose tail (prog's) does not fit */
		"7f0000419000-7f000041b000 rw-p 00218000 fe:00 1311 /lib/other.so\n"
		"7f000041b000-7f0000428000 rw-p 00000000 00:00 0\n",
		/* same inode, other device: another file */
		"7f0000419000-7f000041b000 rw-p 00218000 08:01 2222 /lib/libc.so.6\n"
		"7f000041b000-7f0000428000 rw-p 00000000 00:00 0\n",
	};
	/* a libc whose .bss fits in its data's last page: no anonymous tail at all */
	struct ml_elf_tail small = sample_tails[1];
	struct ml_maps_hints h = { .tails = &small, .ntails = 1 };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		parse_text(texts[i]);
		ml_maps_classify_hints(&S, "/usr/bin/prog", &sample_hints);
		if (strcmp(ml_vma_kind_name(S.v[1].kind), "anon"))
			T_FAILMSG("text %zu: %s, not anon", i, ml_vma_kind_name(S.v[1].kind));
		ml_vma_set_free(&S);
	}
	small.memsz = small.filesz + 0x100;
	parse_text("7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /lib/libc.so.6\n"
		   "7f000041b000-7f001041b000 rw-p 00000000 00:00 0\n");
	ml_maps_classify_hints(&S, "/usr/bin/prog", &h);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "anon");
	ml_vma_set_free(&S);
	/* the .bss exactly, and a .bss of which a part was unmapped */
	parse_text("7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /lib/libc.so.6\n"
		   "7f000041b000-7f0000428000 rw-p 00000000 00:00 0\n");
	ml_maps_classify_hints(&S, "/usr/bin/prog", &sample_hints);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "lib-data");
	ml_vma_set_free(&S);
	parse_text("7f0000419000-7f000041b000 rw-p 00218000 fe:00 2222 /lib/libc.so.6\n"
		   "7f000041b000-7f0000420000 rw-p 00000000 00:00 0\n");
	ml_maps_classify_hints(&S, "/usr/bin/prog", &sample_hints);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "lib-data");
	ml_vma_set_free(&S);
}

/*
 * The kernel names [heap] the VMA that overlaps [start_brk, brk]: before
 * the first brk() that can be the executable's .bss, ending at start_brk.
 * Names given with PR_SET_VMA_ANON_NAME are anonymous memory.
 */
static void test_classify_heap_and_names(void)
{
	static const char text[] =
		"55d0c8a07000-55d0c8a08000 rw-p 00007000 fe:00 1311 /usr/bin/prog\n"
		"55d0c8a08000-55d0c8a0a000 rw-p 00000000 00:00 0 [heap]\n"
		"7f0000000000-7f0010000000 rw-p 00000000 00:00 0 [anon:python arena]\n"
		"7f0010000000-7f0010100000 rw-s 00000000 00:01 7 [anon_shmem:ring]\n";
	struct ml_maps_hints h = sample_hints;

	parse_text(text);
	h.start_brk = 0x55d0c8a0a000;
	ml_maps_classify_hints(&S, "/usr/bin/prog", &h);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "bss");
	CHECK_STR(ml_vma_kind_name(S.v[2].kind), "anon");
	CHECK_STR(ml_vma_kind_name(S.v[3].kind), "shm");
	/* once the heap has grown into it (or brk is elsewhere), it is the heap */
	h.start_brk = 0x55d0c8a08000;
	ml_maps_classify_hints(&S, "/usr/bin/prog", &h);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "heap");
	h.start_brk = 0;
	ml_maps_classify_hints(&S, "/usr/bin/prog", &h);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "heap");
	ml_vma_set_free(&S);
}

static void test_writable_private_filter(void)
{
	size_t n = 0;

	parse_sample();
	for (size_t i = 0; i < S.n; i++)
		n += ml_vma_is_writable_private(&S.v[i]);
	/* data, bss, heap, anon, libc data, libc bss, stack */
	CHECK_EQ(n, 7);
	CHECK(!ml_vma_is_writable_private(&S.v[13])); /* shared */
	CHECK(!ml_vma_is_writable_private(&S.v[17])); /* vvar */
	ml_vma_set_free(&S);
}

static void test_malformed(void)
{
	static const char *bad[] = {
		"zzzz-1000 rw-p 00000000 00:00 0\n",
		"1000-0000 rw-p 00000000 00:00 0\n",
		"1000-2000 rwzp 00000000 00:00 0\n",
		"1000-2000 rw-p 00000000 0000 0\n",
		"1000-2000 rw-p\n",
		"1001-2000 rw-p 00000000 00:00 0\n",
		"1000-2000 rw-p 00000000 00:00 x\n",
		"11111111111111111-2000 rw-p 00000000 00:00 0\n",
	};
	struct ml_err err = { 0 };

	ml_vma_set_init(&S);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = ml_maps_parse(bad[i], strlen(bad[i]), &S, &err);

		CHECK_EQ(r, -EINVAL);
		CHECK(strstr(err.msg, "maps line") != NULL);
	}
	/* overlapping lines are a text that changed while it was read (-EAGAIN:
	 * read it again; test_maps_retry), not a malformed one */
	static const char overlap[] = "1000-3000 rw-p 00000000 00:00 0\n"
				      "2000-4000 rw-p 00000000 00:00 0\n";

	CHECK_EQ(ml_maps_parse(overlap, strlen(overlap), &S, &err), -EAGAIN);
	CHECK(strstr(err.msg, "maps line 2 overlaps") != NULL);
	/* empty input is an empty set, a final line without newline is fine */
	CHECK_EQ(ml_maps_parse("", 0, &S, &err), 0);
	CHECK_EQ(S.n, 0);
	CHECK_EQ(ml_maps_parse("1000-2000 rw-p 00000000 00:00 0", 31, &S, &err), 0);
	CHECK_EQ(S.n, 1);
	ml_vma_set_free(&S);
}

static void test_diff_and_find(void)
{
	static const char old_txt[] = "1000-2000 rw-p 0 00:00 0\n"
				      "3000-5000 rw-p 0 00:00 0\n"
				      "8000-9000 rw-p 0 00:00 0\n";
	static const char new_txt[] = "1000-2000 rw-p 0 00:00 0\n"
				      "3000-6000 rw-p 0 00:00 0\n"
				      "6000-7000 rw-p 0 00:00 0\n"
				      "8000-9000 rw-p 0 00:00 0\n";
	struct ml_vma_set a, b;
	struct ml_err err = { 0 };
	size_t added[8];

	ml_vma_set_init(&a);
	ml_vma_set_init(&b);
	REQUIRE(ml_maps_parse(old_txt, strlen(old_txt), &a, &err) == 0);
	REQUIRE(ml_maps_parse(new_txt, strlen(new_txt), &b, &err) == 0);
	size_t n = ml_vma_diff(&a, &b, added, 8);
	CHECK_EQ(n, 2);
	CHECK_EQ(added[0], 1); /* grew: start and end must both match */
	CHECK_EQ(added[1], 2);
	CHECK_EQ(ml_vma_find(&b, 0x1000), 0);
	CHECK_EQ(ml_vma_find(&b, 0x1fff), 0);
	CHECK_EQ(ml_vma_find(&b, 0x2000), -1);
	CHECK_EQ(ml_vma_find(&b, 0x6500), 2);
	CHECK_EQ(ml_vma_find(&b, 0x9000), -1);
	ml_vma_set_free(&a);
	ml_vma_set_free(&b);
}

static void test_own_maps(void)
{
	struct ml_err err = { 0 };
	int heap = 0, stack = 0, text = 0;

	ml_vma_set_init(&S);
	REQUIRE_MSG(ml_maps_read(getpid(), &S, &err) == 0, "%s", err.msg);
	ml_maps_classify(&S, NULL);
	for (size_t i = 0; i < S.n; i++) {
		heap += S.v[i].kind == ML_VMA_HEAP;
		stack += S.v[i].kind == ML_VMA_STACK;
		text += S.v[i].kind == ML_VMA_TEXT && S.v[i].perms[2] == 'x';
	}
	CHECK_EQ(stack, 1);
	CHECK_EQ(text, 1);
	CHECK(heap <= 1);
	CHECK_EQ(ml_maps_read(999999, &S, &err), -ESRCH);
	ml_vma_set_free(&S);
}

/* Big enough to have pages of .bss beyond the data's last page. */
static char own_bss[1 << 20];

/*
 * This program's own .bss, classified from its ELF headers (read through
 * /proc/self): bss. Then an anonymous mapping placed right after it (the
 * kernel merges the two into one VMA when it can): anon, not bss.
 */
/* start_brk, field 47 of /proc/self/stat (after the ")" of comm, field 2) */
static uint64_t start_brk(void)
{
	char buf[4096], *f;
	unsigned long long v = 0;
	FILE *st = fopen("/proc/self/stat", "re");
	size_t n = st ? fread(buf, 1, sizeof(buf) - 1, st) : 0;

	if (st)
		fclose(st);
	buf[n] = '\0';
	f = strrchr(buf, ')');
	for (int field = 2; f && field < 47; field++)
		f = strchr(f + 1, ' ');
	if (f)
		sscanf(f + 1, "%llu", &v);
	return v;
}

static void test_own_bss(void)
{
	struct ml_kind_src *k = NULL;
	enum ml_vma_kind want;
	struct ml_err err = { 0 };
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	long i;
	void *p;

	REQUIRE(n > 0);
	exe[n] = '\0';
	REQUIRE(ml_kind_src_open(&k, getpid(), &err) == 0);
	T_DEFER(ml_kind_src_close, k);
	ml_vma_set_init(&S);
	T_DEFER(ml_vma_set_free, &S);
	REQUIRE(ml_maps_read(getpid(), &S, &err) == 0);
	ml_maps_classify_proc(k, &S, exe);
	i = ml_vma_find(&S, (uint64_t)(uintptr_t)(own_bss + sizeof(own_bss) / 2));
	REQUIRE(i >= 0);
	CHECK_STR(ml_vma_kind_name(S.v[i].kind), "bss");
	p = mmap((void *)(uintptr_t)S.v[i].end, 64 << 20, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || p != (void *)(uintptr_t)S.v[i].end)
		SKIP("the addresses right after the .bss are taken");
	REQUIRE(ml_maps_read(getpid(), &S, &err) == 0);
	ml_maps_classify_proc(k, &S, exe);
	i = ml_vma_find(&S, (uint64_t)(uintptr_t)p);
	/*
	 * The kernel names a VMA that spans start_brk [heap]: where brk's
	 * random offset (up to 1 GiB past the .bss) fell inside the mapping,
	 * the mapping, merged with the .bss, is what the kernel calls the heap.
	 */
	want = start_brk() >= (uint64_t)(uintptr_t)p &&
			       start_brk() <= (uint64_t)(uintptr_t)p + (64 << 20)
		       ? ML_VMA_HEAP
		       : ML_VMA_ANON;
	CHECK(i >= 0 && S.v[i].kind == want);
	i = ml_vma_find(&S, (uint64_t)(uintptr_t)(own_bss + sizeof(own_bss) / 2));
	/* merged with the .bss: the whole VMA is the mapping's; else the .bss stays bss */
	CHECK(i >= 0 && S.v[i].kind == ((uint64_t)(uintptr_t)p < S.v[i].end ? want : ML_VMA_BSS));
	munmap(p, 64 << 20);
}

static void test_kind_names_roundtrip(void)
{
	for (int k = 0; k < ML_VMA_KIND_COUNT; k++)
		CHECK_EQ(ml_vma_kind_from_name(ml_vma_kind_name(k)), k);
	CHECK_EQ(ml_vma_kind_from_name("nope"), -1);
}

int main(void)
{
	RUN(test_parse_fields);
	RUN(test_classify);
	RUN(test_classify_guesses_exe);
	RUN(test_classify_no_hints);
	RUN(test_classify_adjacent_anon);
	RUN(test_classify_heap_and_names);
	RUN(test_own_bss);
	RUN(test_writable_private_filter);
	RUN(test_malformed);
	RUN(test_diff_and_find);
	RUN(test_own_maps);
	RUN(test_kind_names_roundtrip);
	return T_DONE();
}
