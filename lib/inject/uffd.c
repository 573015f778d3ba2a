// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../common/uapi.h"
#include "uffd.h"

int mli_uffd_api(int uffd, uint64_t *features_out, struct ml_err *err)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_WP_FEATURES };

	/* shared memory too, where the kernel can (not required) */
	if (mli_uffd_kernel_features() & UFFD_FEATURE_WP_HUGETLBFS_SHMEM)
		api.features |= UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
	if (ioctl(uffd, UFFDIO_API, &api) < 0) {
		int e = errno;

		if (e == EINVAL) {
			uint64_t have = mli_uffd_kernel_features();

			if (!(have & UFFD_FEATURE_WP_ASYNC))
				return ml_err_set(
					err, ENOTSUP,
					"the kernel lacks UFFD_FEATURE_WP_ASYNC (Linux 6.7 or "
					"later with CONFIG_PTE_MARKER_UFFD_WP is needed)");
			if (!(have & UFFD_FEATURE_WP_UNPOPULATED))
				return ml_err_set(err, ENOTSUP,
						  "the kernel lacks UFFD_FEATURE_WP_UNPOPULATED "
						  "(Linux 6.4 or later is needed)");
		}
		return ml_err_set(err, e, "UFFDIO_API failed: %s", strerror(e));
	}
	if ((api.features & UFFD_WP_FEATURES) != UFFD_WP_FEATURES)
		return ml_err_set(err, ENOTSUP,
				  "the kernel did not grant async write-protect (features 0x%llx)",
				  (unsigned long long)api.features);
	if (features_out)
		*features_out = api.features;
	return 0;
}

int mli_uffd_register_wp(int uffd, uint64_t start, uint64_t end, struct ml_err *err)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		int e = errno;

		return ml_err_set(err, e, "UFFDIO_REGISTER %llx-%llx: %s%s",
				  (unsigned long long)start, (unsigned long long)end, strerror(e),
				  e == EBUSY ? " (the range belongs to another userfaultfd)" : "");
	}
	return 0;
}

int mli_uffd_unregister(int uffd, uint64_t start, uint64_t end, struct ml_err *err)
{
	struct uffdio_range r = { .start = start, .len = end - start };

	if (ioctl(uffd, UFFDIO_UNREGISTER, &r) < 0) {
		int e = errno;

		return ml_err_set(err, e, "UFFDIO_UNREGISTER %llx-%llx: %s",
				  (unsigned long long)start, (unsigned long long)end, strerror(e));
	}
	return 0;
}

int mli_uffd_unprotect(int uffd, uint64_t start, uint64_t end, struct ml_err *err)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = start, .len = end - start },
		.mode = 0,
	};

	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) < 0) {
		int e = errno;

		return ml_err_set(err, e, "UFFDIO_WRITEPROTECT (clear) %llx-%llx: %s",
				  (unsigned long long)start, (unsigned long long)end, strerror(e));
	}
	return 0;
}
