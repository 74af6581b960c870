// SPDX-License-Identifier: MIT
/*
 * reg_mr_e2e IFNAME: xr_reg_mr on IFNAME's device checks and pins memory as
 * ibv_reg_mr does. EFAULT for a range with an unmapped page, for read-only
 * memory asked for any right that writes (LOCAL_WRITE, REMOTE_WRITE,
 * REMOTE_ATOMIC, MW_BIND) and for PROT_NONE memory; read-only memory with
 * read rights only registers. A registered range is locked (VmLck grows by
 * its pages) until the last MR over a page goes: overlapping and identical
 * registrations keep their pages locked when one of them is deregistered.
 * Then, without CAP_IPC_LOCK, a registration beyond RLIMIT_MEMLOCK fails with
 * ENOMEM and leaves nothing locked; within the limit it works. Locking is
 * skipped where mlock locks nothing (a build with AddressSanitizer).
 * Prints "ok ..." per check and "PASS", or "FAIL ..." and exits 1.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xroce/xroce.h"

static int failures;
static long page;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok   ");                                                           \
		} else {                                                                           \
			failures++;                                                                \
			printf("FAIL ");                                                           \
		}                                                                                  \
		printf(__VA_ARGS__);                                                               \
		putchar('\n');                                                                     \
	} while (0)

/* The process's locked memory in pages (VmLck of /proc/self/status), or -1. */
static long locked_pages(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024 / page;
}

static void *map_pages(size_t n, int prot)
{
	void *p = mmap(NULL, n * page, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* Registers and expects failure with want, or success (want 0: the MR is returned). */
static struct xr_mr *reg(struct xr_pd *pd, void *addr, size_t len, int access, int want,
			 const char *what)
{
	struct xr_mr *mr;

	errno = 0;
	mr = xr_reg_mr(pd, addr, len, access);
	if (want)
		EXPECT(!mr && errno == want, "%s: %s (want %s)", what,
		       mr ? "registered" : strerror(errno), strerror(want));
	else
		EXPECT(mr, "%s: %s", what, mr ? "registered" : strerror(errno));
	if (mr && want) {
		xr_dereg_mr(mr);
		mr = NULL;
	}
	return mr;
}

static void dereg(struct xr_mr *mr)
{
	if (mr && xr_dereg_mr(mr))
		EXPECT(0, "dereg_mr: %s", strerror(errno));
}

static void test_unmapped(struct xr_pd *pd)
{
	uint8_t *p = map_pages(3, PROT_READ | PROT_WRITE);

	munmap(p + page, page);
	reg(pd, p, 3 * page, XR_ACCESS_LOCAL_WRITE, EFAULT, "a hole in the middle");
	reg(pd, p + page, page, 0, EFAULT, "an unmapped page, read only");
	reg(pd, p + page - 1, 2, 0, EFAULT, "two bytes, the second unmapped");
	dereg(reg(pd, p, page, XR_ACCESS_LOCAL_WRITE, 0, "the page before the hole"));
	dereg(reg(pd, p + 2 * page, page, XR_ACCESS_LOCAL_WRITE, 0, "the page after the hole"));
	/* Argument errors come first, as in verbs. */
	reg(pd, p + page, page, XR_ACCESS_REMOTE_WRITE, EINVAL,
	    "remote write without local write over a hole");
	dereg(reg(pd, NULL, 0, XR_ACCESS_LOCAL_WRITE, 0, "zero length at NULL"));
	dereg(reg(pd, p + page, 0, XR_ACCESS_LOCAL_WRITE, 0, "zero length in the hole"));
	munmap(p, page);
	munmap(p + 2 * page, page);
}

static void test_rights(struct xr_pd *pd)
{
	static const struct {
		int access;
		const char *name;
	} writers[] = {
	    {XR_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},
	    {XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
	    {XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC"},
	    {XR_ACCESS_MW_BIND, "MW_BIND"},
	};
	uint8_t *ro = map_pages(2, PROT_READ | PROT_WRITE), *none = map_pages(1, PROT_NONE);
	char what[96];

	/* One mapping, its second page read-only: the range is mapped but not all writable. */
	mprotect(ro + page, page, PROT_READ);
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		snprintf(what, sizeof(what), "PROT_READ memory with %s", writers[i].name);
		reg(pd, ro + page, page, writers[i].access, EFAULT, what);
		snprintf(what, sizeof(what), "half PROT_READ memory with %s", writers[i].name);
		reg(pd, ro, 2 * page, writers[i].access, EFAULT, what);
	}
	dereg(reg(pd, ro + page, page, XR_ACCESS_REMOTE_READ, 0, "PROT_READ memory, REMOTE_READ"));
	dereg(reg(pd, ro, 2 * page, 0, 0, "half PROT_READ memory, local read"));
	reg(pd, none, page, 0, EFAULT, "PROT_NONE memory, local read");
	munmap(ro, 2 * page);
	munmap(none, page);
}

static void test_locked(struct xr_pd *pd)
{
	uint8_t *p = map_pages(8, PROT_READ | PROT_WRITE);
	long base = locked_pages(), now;
	struct xr_mr *a, *b, *c;

	EXPECT(base >= 0, "VmLck readable (%ld pages)", base);
	/* a: pages 0-3, b: pages 2-5 (not page-aligned at either end), c: a's range again. */
	a = reg(pd, p, 4 * page, XR_ACCESS_LOCAL_WRITE, 0, "pages 0-3");
	b = reg(pd, p + 2 * page + 100, 4 * page - 200, XR_ACCESS_LOCAL_WRITE, 0, "pages 2-5");
	c = reg(pd, p, 4 * page, 0, 0, "pages 0-3 again");
	now = locked_pages();
	EXPECT(now - base == 6, "three MRs over pages 0-5 lock %ld pages (want 6)", now - base);
	dereg(c);
	now = locked_pages();
	EXPECT(now - base == 6,
	       "after one of the two identical MRs went: %ld pages locked (want 6)", now - base);
	dereg(a);
	now = locked_pages();
	EXPECT(now - base == 4, "after pages 0-3 went, pages 2-5 stay: %ld pages locked (want 4)",
	       now - base);
	dereg(b);
	now = locked_pages();
	EXPECT(now == base, "after the last MR: %ld pages locked more than before", now - base);
	munmap(p, 8 * page);
}

/* Whether mlock locks at all: AddressSanitizer's interceptor ignores it. */
static bool mlock_locks(void)
{
	uint8_t *p = map_pages(1, PROT_READ | PROT_WRITE);
	long before = locked_pages();
	bool locks = !mlock(p, page) && locked_pages() == before + 1;

	munlock(p, page);
	munmap(p, page);
	return locks;
}

/* Drops CAP_IPC_LOCK from the effective and permitted sets: mlock then obeys RLIMIT_MEMLOCK. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].inheritable &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

static void test_memlock_limit(struct xr_pd *pd)
{
	const long limit_pages = 32;
	uint8_t *p = map_pages(64, PROT_READ | PROT_WRITE);
	long base, now;
	struct rlimit lim;
	struct xr_mr *small, *big;
	int err = drop_ipc_lock();

	EXPECT(!err, "CAP_IPC_LOCK dropped: %s", strerror(-err));
	base = locked_pages();
	lim.rlim_cur = lim.rlim_max = (rlim_t)(base + limit_pages) * page;
	EXPECT(!setrlimit(RLIMIT_MEMLOCK, &lim), "RLIMIT_MEMLOCK %ld pages above VmLck: %s",
	       limit_pages, strerror(errno));
	small = reg(pd, p, 8 * page, XR_ACCESS_LOCAL_WRITE, 0, "8 pages within the limit");
	big = reg(pd, p + 16 * page, 40 * page, XR_ACCESS_LOCAL_WRITE, ENOMEM,
		  "40 more pages beyond the limit");
	now = locked_pages();
	EXPECT(now - base == 8, "the refused registration left %ld pages locked (want 8)",
	       now - base);
	dereg(small);
	big =
	    reg(pd, p + 16 * page, 24 * page, XR_ACCESS_LOCAL_WRITE, 0, "24 pages once the 8 went");
	now = locked_pages();
	EXPECT(now - base == 24, "%ld pages locked (want 24)", now - base);
	dereg(big);
	lim.rlim_cur = lim.rlim_max = 0;
	EXPECT(!setrlimit(RLIMIT_MEMLOCK, &lim), "RLIMIT_MEMLOCK 0");
	reg(pd, p, page, 0, ENOMEM, "a page with RLIMIT_MEMLOCK 0");
	dereg(reg(pd, p, 0, 0, 0, "zero length with RLIMIT_MEMLOCK 0"));
	munmap(p, 64 * page);
}

int main(int argc, char **argv)
{
	struct xr_device_open_attr attr = {.attach_if_needed = 1};
	struct xr_device *dev;
	struct xr_pd *pd;

	if (argc != 2) {
		fprintf(stderr, "usage: reg_mr_e2e IFNAME\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	page = sysconf(_SC_PAGESIZE);
	dev = xr_open_device(argv[1], &attr);
	if (!dev) {
		printf("FAIL open %s: %s\n", argv[1], xr_strerror(errno));
		return 1;
	}
	pd = xr_alloc_pd(dev);
	if (!pd) {
		printf("FAIL alloc_pd: %s\n", strerror(errno));
		return 1;
	}
	test_unmapped(pd);
	test_rights(pd);
	if (mlock_locks()) {
		test_locked(pd);
		/* Last: CAP_IPC_LOCK does not come back. */
		test_memlock_limit(pd);
	} else {
		printf(
		    "skip locking: mlock here locks nothing (AddressSanitizer makes it a no-op)\n");
	}
	xr_dealloc_pd(pd);
	xr_close_device(dev);
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
