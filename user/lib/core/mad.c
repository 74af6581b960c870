/* SPDX-License-Identifier: MIT */
/* Reading and writing the fields of a MAD (mad.h). */
#include "mad.h"

/* The bytes a field touches: at most 8, as bit + width <= 64. */
static unsigned field_bytes(struct xr_mad_field f)
{
	return (f.bit + f.width + 7u) / 8u;
}

static uint64_t field_mask(struct xr_mad_field f)
{
	return f.width >= 64 ? ~0ull : (1ull << f.width) - 1;
}

uint64_t xr_mad_get(const uint8_t *mad, struct xr_mad_field f)
{
	unsigned n = field_bytes(f);
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | mad[f.byte + i];
	return (v >> (n * 8 - f.bit - f.width)) & field_mask(f);
}

void xr_mad_set(uint8_t *mad, struct xr_mad_field f, uint64_t v)
{
	unsigned n = field_bytes(f), shift = n * 8 - f.bit - f.width;
	uint64_t word = 0, mask = field_mask(f) << shift;

	for (unsigned i = 0; i < n; i++)
		word = word << 8 | mad[f.byte + i];
	word = (word & ~mask) | ((v << shift) & mask);
	for (unsigned i = n; i-- > 0; word >>= 8)
		mad[f.byte + i] = (uint8_t)word;
}

#define PRIVATE_DATA(msg)                                                                          \
	{                                                                                          \
		XR_CM_##msg##_PRIVATE_DATA_OFF, XR_CM_##msg##_PRIVATE_DATA_SIZE                    \
	}

/* By attribute ID, from the REQ's on; LAP and APR, which xroce neither sends nor takes, have none.
 */
static const struct xr_cm_private_data private_data[] = {
    [XR_CM_ATTR_REQ - XR_CM_ATTR_REQ] = PRIVATE_DATA(REQ),
    [XR_CM_ATTR_MRA - XR_CM_ATTR_REQ] = PRIVATE_DATA(MRA),
    [XR_CM_ATTR_REJ - XR_CM_ATTR_REQ] = PRIVATE_DATA(REJ),
    [XR_CM_ATTR_REP - XR_CM_ATTR_REQ] = PRIVATE_DATA(REP),
    [XR_CM_ATTR_RTU - XR_CM_ATTR_REQ] = PRIVATE_DATA(RTU),
    [XR_CM_ATTR_DREQ - XR_CM_ATTR_REQ] = PRIVATE_DATA(DREQ),
    [XR_CM_ATTR_DREP - XR_CM_ATTR_REQ] = PRIVATE_DATA(DREP),
    [XR_CM_ATTR_SIDR_REQ - XR_CM_ATTR_REQ] = PRIVATE_DATA(SIDR_REQ),
    [XR_CM_ATTR_SIDR_REP - XR_CM_ATTR_REQ] = PRIVATE_DATA(SIDR_REP),
};

struct xr_cm_private_data xr_cm_private_data_of(uint16_t attr_id)
{
	unsigned i = (unsigned)attr_id - XR_CM_ATTR_REQ;

	return i < sizeof(private_data) / sizeof(private_data[0])
		   ? private_data[i]
		   : (struct xr_cm_private_data){0, 0};
}
