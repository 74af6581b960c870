/* SPDX-License-Identifier: MIT */
/*
 * Helpers for unit tests of QP1 and the CM on the in-memory link
 * (core_harness.h): a MAD's common header, and a datagram from a forged
 * QP1 delivered to a side's QP1. Header-only; every helper is static inline.
 */
#ifndef XROCE_TESTS_GSI_HARNESS_H
#define XROCE_TESTS_GSI_HARNESS_H

#include "core/mad.h"
#include "core_harness.h"

/* A zeroed MAD with its common header (base version 1). */
static inline void h_mad_header(uint8_t *mad, uint8_t mgmt_class, uint8_t class_version,
				uint8_t method, uint64_t tid, uint16_t attr)
{
	memset(mad, 0, XR_MAD_SIZE);
	xr_mad_set(mad, XR_MAD_BASE_VERSION, XR_MGMT_BASE_VERSION);
	xr_mad_set(mad, XR_MAD_MGMT_CLASS, mgmt_class);
	xr_mad_set(mad, XR_MAD_CLASS_VERSION, class_version);
	xr_mad_set(mad, XR_MAD_METHOD, method);
	xr_mad_set(mad, XR_MAD_TID, tid);
	xr_mad_set(mad, XR_MAD_ATTR_ID, attr);
}

/*
 * A UD datagram (opcode) from QP1 along path to side to's QP1, with Q_Key
 * qkey, P_Key pkey (0: the default) and len bytes of payload, delivered at once.
 */
static inline void h_deliver_to_qp1(struct h_pair *p, int to, const struct xr_path *path,
				    uint8_t opcode, uint32_t qkey, uint16_t pkey,
				    const uint8_t *payload, uint32_t len)
{
	uint8_t *deth;
	struct h_forge f;

	if (!h_forge_begin(&f, path, opcode, XR_GSI_QPN, 0, len, 0))
		return;
	if (pkey) {
		f.out.bth[2] = (uint8_t)(pkey >> 8);
		f.out.bth[3] = (uint8_t)pkey;
	}
	deth = f.out.bth + xr_deth_off(xr_opinfo[opcode].flags);
	h_put32(deth, qkey);
	h_put32(deth + 4, XR_GSI_QPN);
	memcpy(f.out.payload, payload, len);
	h_forge_deliver(p, to, &f);
}

#endif
