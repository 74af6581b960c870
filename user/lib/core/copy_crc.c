/* SPDX-License-Identifier: MIT */
#include "copy_crc.h"

#include <string.h>

#include <libdeflate.h>

/*
 * The CRC runs over each chunk right after it is copied, while the chunk is
 * still in L1: small enough to stay there beside the source's lines, large
 * enough that libdeflate's folding loop runs at full speed.
 */
#define COPY_CRC_CHUNK 1024

uint32_t xr_copy_crc32(void *dst, const void *src, size_t len, uint32_t crc)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	while (len) {
		size_t n = len < COPY_CRC_CHUNK ? len : COPY_CRC_CHUNK;

		memcpy(d, s, n);
		crc = libdeflate_crc32(crc, d, n);
		d += n;
		s += n;
		len -= n;
	}
	return crc;
}
