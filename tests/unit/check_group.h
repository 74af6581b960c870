/* SPDX-License-Identifier: MIT */
/*
 * Check groups for the tests against the golden Soft-RoCE captures: a group
 * counts its assertions and failures, prints the first few failures and one
 * line at the end; a group that asserted nothing fails (it proves nothing).
 * Also where the captures are. Header-only; every helper is static inline.
 */
#ifndef XROCE_TESTS_CHECK_GROUP_H
#define XROCE_TESTS_CHECK_GROUP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Relative to the repository's root, where the tests run: shared/ lies next to it. */
#define DEFAULT_VECTOR_DIR "../shared/vectors/rxe"
#define MAX_REPORTED_FAILURES 10

struct group {
	const char *name;
	unsigned long checks, failures;
};

static unsigned int groups_failed, groups_run;

static inline void check(struct group *g, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void check(struct group *g, bool ok, const char *fmt, ...)
{
	va_list ap;

	g->checks++;
	if (ok)
		return;
	if (++g->failures <= MAX_REPORTED_FAILURES) {
		fprintf(stderr, "  FAIL [%s] ", g->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

/* Ends g with its line; detail (may be NULL) follows the counts. */
static inline void finish_group(struct group *g, const char *detail)
{
	groups_run++;
	if (g->checks == 0) {
		g->failures++;
		fprintf(stderr, "  FAIL [%s] no checks ran\n", g->name);
	}
	if (g->failures)
		groups_failed++;
	printf("%s %-40s %8lu checks, %lu failed%s%s\n", g->failures ? "FAIL" : "ok  ", g->name,
	       g->checks, g->failures, detail ? "; " : "", detail ? detail : "");
}

/* main's report and exit status. */
static inline int groups_summary(const char *test_name)
{
	printf("%s: %u of %u groups passed\n", test_name, groups_run - groups_failed, groups_run);
	return groups_failed ? 1 : 0;
}

/* The capture directory: $XROCE_VECTORS, else the shared one. */
static inline const char *vector_dir(void)
{
	const char *d = getenv("XROCE_VECTORS");

	return d && *d ? d : DEFAULT_VECTOR_DIR;
}

#endif
