/* SPDX-License-Identifier: MIT */
/*
 * Memory that xr_reg_mr registers: checked to be there with the rights the
 * MR grants, and locked in memory until the last MR over it goes (mem_pin.c).
 */
#ifndef XROCE_MEM_PIN_H
#define XROCE_MEM_PIN_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Checks that [addr, addr + length) is mapped readable (and writable when
 * writable is set) and locks its pages: 0, -EFAULT when some page is not
 * there or lacks a right, -ENOMEM when RLIMIT_MEMLOCK forbids the lock (as
 * ibv_reg_mr), or another negative errno of mlock. A length of 0 pins nothing.
 */
int xr_mem_pin(const void *addr, size_t length, bool writable);
/* Undoes one xr_mem_pin of the same range: unlocks the pages no other pin covers. */
void xr_mem_unpin(const void *addr, size_t length);

#endif /* XROCE_MEM_PIN_H */
