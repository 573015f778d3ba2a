// SPDX-License-Identifier: MIT
/*
 * leaks --stacks dwarf in user space: reads from a stack copy, the DWARF
 * register numbers, the store of distinct stacks and their bindings; and,
 * where memlens is built with libdw, an unwinding of this test's own stack
 * from a copy of it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "../../trace/stackstore.c"
#include "../../trace/unwind.c"

static void test_copy_read_bounds(void)
{
	uint64_t words[4] = { 11, 22, 33, 44 }, w = 0;
	struct unwind_input in = { .stack = words, .size = sizeof(words) };

	in.regs[UNWIND_SP] = 0x1000;
	CHECK(unwind_copy_read(&in, 0x1000, &w));
	CHECK_EQ(w, 11);
	CHECK(unwind_copy_read(&in, 0x1018, &w));
	CHECK_EQ(w, 44);
	CHECK(unwind_copy_read(&in, 0x1004, &w)); /* unaligned, still inside */
	CHECK(!unwind_copy_read(&in, 0x1019, &w)); /* runs past the end */
	CHECK(!unwind_copy_read(&in, 0x1020, &w));
	CHECK(!unwind_copy_read(&in, 0xff8, &w)); /* below the stack pointer */
	CHECK(!unwind_copy_read(&in, UINT64_MAX - 3, &w)); /* wraps */
	in.regs[UNWIND_SP] = UINT64_MAX - 15; /* a copy that would wrap */
	CHECK(!unwind_copy_read(&in, UINT64_MAX - 7, &w));
}

static void test_dwarf_regnos(void)
{
	CHECK_EQ(unwind_dwarf_regno(UNWIND_IP), -1);
	CHECK_EQ(unwind_dwarf_regno(UNWIND_SP), 7);
	CHECK_EQ(unwind_dwarf_regno(UNWIND_BP), 6);
	CHECK_EQ(unwind_dwarf_regno(UNWIND_BX), 3);
	CHECK_EQ(unwind_dwarf_regno(UNWIND_R12), 12);
	CHECK_EQ(unwind_dwarf_regno(UNWIND_R15), 15);
	CHECK_EQ(unwind_dwarf_regno(UNWIND_NR_REGS), -1);
	CHECK(!strcmp(mlt_unwind_end_name(UNWIND_OUT_OF_COPY), "out_of_copy"));
	CHECK(!strcmp(mlt_unwind_end_name(UNWIND_NR_ENDS), "?"));
}

static void test_store_interns_once(void)
{
	uint64_t a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 }, c[2] = { 1, 5 };
	const uint64_t *got;
	struct stackstore s;

	mlt_stackstore_init(&s, 3);
	CHECK_EQ(mlt_stackstore_intern(&s, a, 3), 0);
	CHECK_EQ(mlt_stackstore_intern(&s, b, 3), 1);
	CHECK_EQ(mlt_stackstore_intern(&s, a, 3), 0);
	CHECK_EQ(mlt_stackstore_intern(&s, a, 2), 2); /* a prefix is another stack */
	CHECK_EQ(mlt_stackstore_intern(&s, c, 2), -ENOSPC);
	CHECK_EQ(mlt_stackstore_intern(&s, b, 3), 1); /* known ones still found when full */
	CHECK_EQ(mlt_stackstore_get(&s, 1, &got), 3);
	CHECK(!memcmp(got, b, sizeof(b)));
	CHECK_EQ(mlt_stackstore_get(&s, 3, &got), 0);
	mlt_stackstore_free(&s);
}

/* many stacks: the index grows, every one is still found under its id */
static void test_store_grows(void)
{
	struct stackstore s;
	uint64_t v[2];

	mlt_stackstore_init(&s, 0);
	for (uint64_t i = 0; i < 20000; i++) {
		v[0] = i;
		v[1] = i * 7;
		CHECK_EQ(mlt_stackstore_intern(&s, v, 2), (int)i);
	}
	for (uint64_t i = 0; i < 20000; i += 97) {
		v[0] = i;
		v[1] = i * 7;
		CHECK_EQ(mlt_stackstore_intern(&s, v, 2), (int)i);
	}
	CHECK_EQ(s.nstacks, 20000);
	mlt_stackstore_free(&s);
}

static void test_bindings_kept_and_dropped(void)
{
	uint64_t live[] = { 3, 5000, 99999 }, st = 42;
	struct stackstore s;

	mlt_stackstore_init(&s, 0);
	CHECK_EQ(mlt_stackstore_intern(&s, &st, 1), 0);
	CHECK_EQ(mlt_stackstore_lookup(&s, 3), -1);
	for (uint64_t seq = 0; seq < 100000; seq++)
		CHECK_EQ(mlt_stackstore_bind(&s, seq, 0), 0);
	CHECK_EQ(s.nbinds, 100000);
	CHECK_EQ(mlt_stackstore_lookup(&s, 77777), 0);
	CHECK_EQ(mlt_stackstore_lookup(&s, 100000), -1);
	CHECK_EQ(mlt_stackstore_keep(&s, live, 3), 0);
	CHECK_EQ(s.nbinds, 3);
	CHECK_EQ(mlt_stackstore_lookup(&s, 5000), 0);
	CHECK_EQ(mlt_stackstore_lookup(&s, 99999), 0);
	CHECK_EQ(mlt_stackstore_lookup(&s, 4), -1);
	CHECK_EQ(mlt_stackstore_keep(&s, live, 0), 0); /* none live: none kept */
	CHECK_EQ(s.nbinds, 0);
	CHECK_EQ(mlt_stackstore_lookup(&s, 3), -1);
	mlt_stackstore_free(&s);
}

#if defined(MEMLENS_LIBDW) && defined(__x86_64__)
/* where the stack of this thread ends (its mapping in /proc/self/maps) */
static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi;
	char line[512];
	uint64_t end = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

static unsigned char copy[8192];
static void *ra_capture, *ra_middle;

/* the registers here, and a copy of the stack above them (byte by byte: ASan poisons parts) */
static __attribute__((noinline, no_sanitize("address"))) void capture(struct unwind_input *in)
{
	uint64_t r[8], end;

	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 0(%0)\n\t"
			 "mov %%rsp, 8(%0)\n\t"
			 "mov %%rbp, 16(%0)\n\t"
			 "mov %%rbx, 24(%0)\n\t"
			 "mov %%r12, 32(%0)\n\t"
			 "mov %%r13, 40(%0)\n\t"
			 "mov %%r14, 48(%0)\n\t"
			 "mov %%r15, 56(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	ra_capture = __builtin_return_address(0);
	for (int i = 0; i < UNWIND_NR_REGS; i++)
		in->regs[i] = r[i];
	end = stack_end(r[1]);
	in->to_end = end - r[1] <= sizeof(copy);
	in->size = in->to_end ? end - r[1] : sizeof(copy);
	for (size_t i = 0; i < in->size; i++)
		copy[i] = ((volatile unsigned char *)r[1])[i];
	in->stack = copy;
	in->tid = gettid();
}

static __attribute__((noinline)) void middle(struct unwind_input *in)
{
	capture(in);
	ra_middle = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory"); /* a call, not a jump */
}

static void test_unwinds_own_stack(void)
{
	struct unwind_input in = { 0 };
	struct unwinder *u;
	enum unwind_end end;
	uint64_t ips[64];
	int n;

	CHECK(mlt_unwind_supported());
	middle(&in);
	u = mlt_unwinder_new(getpid());
	REQUIRE(u);
	n = mlt_unwind_stack(u, &in, ips, 64, &end);
	printf("# %d frames, ended %s\n", n, mlt_unwind_end_name(end));
	REQUIRE(n >= 3);
	CHECK_EQ(ips[0], in.regs[UNWIND_IP]);
	CHECK_EQ(ips[1], (uint64_t)ra_capture); /* into middle() */
	CHECK_EQ(ips[2], (uint64_t)ra_middle); /* into this test */
	/* the cached rules give what libdwfl's own unwinding gives */
	{
		uint64_t slow[64];
		enum unwind_end send;
		int k;

		mlt_unwinder_set_slow(u, true);
		k = mlt_unwind_stack(u, &in, slow, 64, &send);
		mlt_unwinder_set_slow(u, false);
		CHECK_EQ(k, n);
		CHECK_EQ(send, end);
		CHECK(!memcmp(slow, ips, (size_t)n * sizeof(*ips)));
	}
	/* two frames only: it is cut, and says so */
	CHECK_EQ(mlt_unwind_stack(u, &in, ips, 2, &end), 2);
	CHECK_EQ(end, UNWIND_CUT);
	/* a copy too short to hold middle()'s frame: its caller is not found */
	in.size = 16;
	in.to_end = false;
	n = mlt_unwind_stack(u, &in, ips, 64, &end);
	CHECK(n >= 1 && n < 3);
	CHECK(end != UNWIND_CUT);
	mlt_unwinder_free(u);
}
#endif

int main(void)
{
	RUN(test_copy_read_bounds);
	RUN(test_dwarf_regnos);
	RUN(test_store_interns_once);
	RUN(test_store_grows);
	RUN(test_bindings_kept_and_dropped);
#if defined(MEMLENS_LIBDW) && defined(__x86_64__)
	RUN(test_unwinds_own_stack);
#endif
	return T_DONE();
}
