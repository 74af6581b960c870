/* SPDX-License-Identifier: MIT */
/*
 * Pinning registered memory as verbs does, so that a peer's WRITE, READ or
 * atomic into an MR never faults in the engine: the range is checked before
 * it is registered, then mlock keeps its pages resident.
 *
 * Mapping and rights come from /proc/self/maps: it tells unmapped from mapped
 * and not resident (mincore does not), read-only from writable (mlock does
 * not), and reading it touches none of the memory, so a bad range costs an
 * error, never a SIGSEGV. Probing by access would need a signal handler in a
 * library, and a write probe would race with the application's own writes.
 *
 * mlock counts against RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK,
 * the rule ib_umem applies to pinned pages; unlike ib_umem it counts pages
 * that several MRs cover once. mlock does not nest: one munlock unlocks a
 * page whatever locked it. So every pin is remembered, process-wide (two
 * devices may register the same memory), and a range is unlocked only where
 * no other pin covers it. Pages the application locked itself lose that lock
 * when an MR over them goes.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem_pin.h"

struct pinned_range {
	uintptr_t start, end; /* page-aligned */
};

/* Every pin, sorted by start; ranges may overlap and repeat. */
static struct {
	pthread_mutex_t lock;
	struct pinned_range *ranges;
	size_t count, cap;
} pins = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int page_range(const void *addr, size_t length, struct pinned_range *r)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr, end = start + length;

	if (end < start || end > UINTPTR_MAX - page)
		return -EINVAL;
	r->start = start & ~(page - 1);
	r->end = (end + page - 1) & ~(page - 1);
	return 0;
}

/* 0 when mappings with the rights asked for cover r without a hole, else -EFAULT. */
static int check_mapped(const struct pinned_range *r, bool writable)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	uintptr_t covered = r->start;
	char *line = NULL;
	size_t cap = 0;
	int err = -EFAULT;

	if (!maps)
		return -errno;
	while (getline(&line, &cap, maps) > 0) {
		uintptr_t start, end;
		char perms[5];

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &start, &end, perms) != 3)
			break;
		if (end <= covered)
			continue;
		if (start > covered || perms[0] != 'r' || (writable && perms[1] != 'w'))
			break;
		covered = end;
		if (covered >= r->end) {
			err = 0;
			break;
		}
	}
	free(line);
	fclose(maps);
	return err;
}

static int remember(const struct pinned_range *r)
{
	size_t at = 0;

	if (pins.count == pins.cap) {
		size_t cap = pins.cap ? 2 * pins.cap : 64;
		struct pinned_range *grown = realloc(pins.ranges, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pins.ranges = grown;
		pins.cap = cap;
	}
	while (at < pins.count && pins.ranges[at].start <= r->start)
		at++;
	memmove(&pins.ranges[at + 1], &pins.ranges[at], (pins.count - at) * sizeof(*r));
	pins.ranges[at] = *r;
	pins.count++;
	return 0;
}

static void forget(const struct pinned_range *r)
{
	for (size_t i = 0; i < pins.count; i++)
		if (pins.ranges[i].start == r->start && pins.ranges[i].end == r->end) {
			memmove(&pins.ranges[i], &pins.ranges[i + 1],
				(pins.count - i - 1) * sizeof(*r));
			pins.count--;
			return;
		}
}

/* Unlocks the parts of r that no remembered pin covers. */
static void unlock_uncovered(const struct pinned_range *r)
{
	uintptr_t from = r->start;

	for (size_t i = 0; i < pins.count && from < r->end; i++) {
		const struct pinned_range *p = &pins.ranges[i];

		if (p->start >= r->end)
			break;
		if (p->end <= from)
			continue;
		if (p->start > from)
			munlock((void *)from, p->start - from);
		from = p->end;
	}
	/* Failures mean the application unmapped memory first: nothing is locked there. */
	if (from < r->end)
		munlock((void *)from, r->end - from);
}

int xr_mem_pin(const void *addr, size_t length, bool writable)
{
	struct pinned_range r;
	int err;

	if (!length)
		return 0;
	err = page_range(addr, length, &r);
	if (err)
		return err;
	pthread_mutex_lock(&pins.lock);
	err = check_mapped(&r, writable);
	if (!err)
		err = remember(&r);
	if (!err && mlock((void *)r.start, r.end - r.start)) {
		/* The range was checked: ENOMEM is the limit, EPERM a limit of 0. */
		err = errno == EPERM ? -ENOMEM : -errno;
		forget(&r);
		/* A failed mlock may have locked part of the range. */
		unlock_uncovered(&r);
	}
	pthread_mutex_unlock(&pins.lock);
	return err;
}

void xr_mem_unpin(const void *addr, size_t length)
{
	struct pinned_range r;

	if (!length || page_range(addr, length, &r))
		return;
	pthread_mutex_lock(&pins.lock);
	forget(&r);
	unlock_uncovered(&r);
	pthread_mutex_unlock(&pins.lock);
}
