/* SPDX-License-Identifier: MIT */
/*
 * The check of tests/ibverbs' C programs: CHECK(cond, fmt, ...) counts a
 * check, or prints "PROGRAM: FAIL: cond: message" and exits 1. Each
 * program defines CHECK_PROGRAM before including this and ends with
 * CHECK_SUMMARY(), "PROGRAM: ok: N checks", which its test looks for.
 */
#ifndef XROCE_TESTS_IBVERBS_CHECK_H
#define XROCE_TESTS_IBVERBS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int checks;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			fprintf(stderr, CHECK_PROGRAM ": FAIL: %s: ", #cond);                      \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_SUMMARY() printf(CHECK_PROGRAM ": ok: %d checks\n", checks)

#endif /* XROCE_TESTS_IBVERBS_CHECK_H */
