/* SPDX-License-Identifier: MIT */
/*
 * Executing atomics on target memory: compare-and-swap, fetch-and-add and
 * their masked forms, atomic with respect to other QPs and to the target
 * CPU's own __atomic operations on the same 8 bytes.
 */
#include "core.h"

uint64_t xr_masked_cas_result(uint64_t old, uint64_t compare, uint64_t compare_mask, uint64_t swap,
			      uint64_t swap_mask)
{
	if ((compare ^ old) & compare_mask)
		return old;
	return (old & ~swap_mask) | (swap & swap_mask);
}

uint64_t xr_masked_faa_result(uint64_t old, uint64_t add, uint64_t boundary)
{
	/*
	 * With the boundary bits cleared in both operands, a carry into a
	 * boundary bit stops there; the boundary bits themselves are then the
	 * sum of the two bits and that carry, which the XOR supplies.
	 */
	return ((old & ~boundary) + (add & ~boundary)) ^ ((old ^ add) & boundary);
}

uint64_t xr_atomic_execute(uint64_t *target, const struct xr_pkt *pkt)
{
	uint64_t old, next;

	switch (pkt->opcode) {
	case XR_OP_RC_CMP_SWAP:
		old = pkt->atm_compare;
		__atomic_compare_exchange_n(target, &old, pkt->atm_swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return old;
	case XR_OP_RC_FETCH_ADD:
		return __atomic_fetch_add(target, pkt->atm_swap_add, __ATOMIC_SEQ_CST);
	default:
		break;
	}
	/* Masked forms: compute the new value from the old, retry if it moved. */
	old = __atomic_load_n(target, __ATOMIC_SEQ_CST);
	do {
		if (pkt->opcode == XR_OP_RC_MASKED_CMP_SWAP)
			next = xr_masked_cas_result(old, pkt->atm_compare, pkt->atm_compare_mask,
						    pkt->atm_swap_add, pkt->atm_swap_mask);
		else
			next = xr_masked_faa_result(old, pkt->atm_swap_add, pkt->atm_swap_mask);
	} while (!__atomic_compare_exchange_n(target, &old, next, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	return old;
}
