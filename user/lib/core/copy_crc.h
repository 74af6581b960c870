/* SPDX-License-Identifier: MIT */
/*
 * Copying bytes and carrying a CRC-32 over them: the payload a frame carries
 * is read from its source once, and the CRC reads the copy while it is
 * still in L1.
 */
#ifndef XROCE_COPY_CRC_H
#define XROCE_COPY_CRC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Copies len bytes from src to dst and returns the CRC-32 (libdeflate's:
 * reflected, initial and final inversion) of crc continued over them.
 */
uint32_t xr_copy_crc32(void *dst, const void *src, size_t len, uint32_t crc);

#endif /* XROCE_COPY_CRC_H */
