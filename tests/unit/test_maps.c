// SPDX-License-Identifier: MIT
/* /proc/PID/maps parsing and classification, on fixed text. */
#include <errno.h>
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

static struct vma_set S;

static void parse_sample(void)
{
	struct ml_err err = { 0 };

	ml_vma_set_init(&S);
	REQUIRE_MSG(ml_maps_parse(sample, strlen(sample), &S, &err) == 0, "%s", err.msg);
	ml_maps_classify(&S, "/usr/bin/prog");
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
	struct ml_err err = { 0 };

	ml_vma_set_init(&S);
	REQUIRE(ml_maps_parse(sample, strlen(sample), &S, &err) == 0);
	ml_maps_classify(&S, NULL);
	CHECK_STR(ml_vma_kind_name(S.v[1].kind), "text");
	CHECK_STR(ml_vma_kind_name(S.v[4].kind), "bss");
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
	struct vma_set a, b;
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
		heap += S.v[i].kind == VMA_HEAP;
		stack += S.v[i].kind == VMA_STACK;
		text += S.v[i].kind == VMA_TEXT && S.v[i].perms[2] == 'x';
	}
	CHECK_EQ(stack, 1);
	CHECK_EQ(text, 1);
	CHECK(heap <= 1);
	CHECK_EQ(ml_maps_read(999999, &S, &err), -ESRCH);
	ml_vma_set_free(&S);
}

static void test_kind_names_roundtrip(void)
{
	for (int k = 0; k < VMA_KIND_COUNT; k++)
		CHECK_EQ(ml_vma_kind_from_name(ml_vma_kind_name(k)), k);
	CHECK_EQ(ml_vma_kind_from_name("nope"), -1);
}

int main(void)
{
	RUN(test_parse_fields);
	RUN(test_classify);
	RUN(test_classify_guesses_exe);
	RUN(test_writable_private_filter);
	RUN(test_malformed);
	RUN(test_diff_and_find);
	RUN(test_own_maps);
	RUN(test_kind_names_roundtrip);
	return T_DONE();
}
