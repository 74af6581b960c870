/* SPDX-License-Identifier: MIT */
/*
 * Queue pair transport types, with libibverbs' values (IBV_QPT_*). Apart from
 * xroce.h because the XDP program needs them too, and BPF code may include
 * nothing from glibc (xroce.h needs <stdint.h>).
 */
#ifndef XROCE_QP_TYPE_H
#define XROCE_QP_TYPE_H

enum xr_qp_type {
	XR_QPT_RC = 2,
	XR_QPT_UC = 3,
	XR_QPT_UD = 4,
};

#endif /* XROCE_QP_TYPE_H */
