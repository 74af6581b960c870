/* SPDX-License-Identifier: MIT */
/* Protection domains, memory regions, and the key checks every access goes through. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* A key is the MR's table index in bits 31:8 and a generation in 7:0. */
#define KEY_INDEX(key) ((key) >> 8)

struct xr_pd *xr_core_alloc_pd(struct xr_core *core)
{
	struct xr_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	pd->core = core;
	pd->device = core->device;
	pd->handle = ++core->pd_seq;
	return pd;
}

int xr_core_dealloc_pd(struct xr_pd *pd)
{
	if (pd->refs)
		return -EBUSY;
	free(pd);
	return 0;
}

struct xr_mr *xr_core_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access, int *err)
{
	struct xr_core *core = pd->core;
	const int known = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
			  XR_ACCESS_REMOTE_ATOMIC | XR_ACCESS_MW_BIND;
	struct xr_mr *mr;
	uint32_t idx;

	*err = -EINVAL;
	if ((access & ~known) || (!addr && length) || length > UINT32_MAX)
		return NULL;
	/* As in verbs: remote write or atomic access requires local write. */
	if ((access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & XR_ACCESS_LOCAL_WRITE))
		return NULL;
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return NULL;
	for (idx = 1; idx < XR_MAX_MR && core->mrs[idx]; idx++)
		;
	*err = -ENOMEM;
	if (idx == XR_MAX_MR)
		return NULL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->lkey = idx << 8 | (++core->mr_key_seq & 0xff);
	mr->rkey = mr->lkey;
	core->mrs[idx] = mr;
	pd->refs++;
	*err = 0;
	return mr;
}

int xr_core_dereg_mr(struct xr_mr *mr)
{
	struct xr_core *core = mr->pd->core;

	core->mrs[KEY_INDEX(mr->lkey)] = NULL;
	mr->pd->refs--;
	free(mr);
	return 0;
}

struct xr_mr *xr_core_mr_lookup(struct xr_core *core, uint32_t key)
{
	uint32_t idx = KEY_INDEX(key);
	struct xr_mr *mr;

	if (idx == 0 || idx >= XR_MAX_MR)
		return NULL;
	mr = core->mrs[idx];
	return (mr && mr->lkey == key) ? mr : NULL;
}

static bool range_in_mr(const struct xr_mr *mr, uint64_t addr, uint64_t len)
{
	uint64_t start = (uintptr_t)mr->addr;

	return addr >= start && len <= mr->length && addr - start <= mr->length - len;
}

enum xr_wc_status xr_core_check_sge(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int need_access)
{
	struct xr_mr *mr;

	if (sge->length == 0)
		return XR_WC_SUCCESS;
	mr = xr_core_mr_lookup(core, sge->lkey);
	if (!mr || mr->pd != pd || (mr->access & need_access) != need_access)
		return XR_WC_LOC_PROT_ERR;
	if (!range_in_mr(mr, sge->addr, sge->length))
		return XR_WC_LOC_PROT_ERR;
	return XR_WC_SUCCESS;
}

enum xr_wc_status xr_core_check_sgl(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int num_sge, int need_access)
{
	for (int i = 0; i < num_sge; i++) {
		enum xr_wc_status st = xr_core_check_sge(core, pd, &sge[i], need_access);

		if (st != XR_WC_SUCCESS)
			return st;
	}
	return XR_WC_SUCCESS;
}

/* Walks the list from offset, calling back with (sge pointer, length) spans. */
#define SGL_WALK(sge, num_sge, offset, len, body)                                                  \
	do {                                                                                       \
		uint32_t skip_ = (offset), left_ = (len);                                          \
		for (int i_ = 0; i_ < (num_sge) && left_; i_++) {                                  \
			uint32_t l_ = (sge)[i_].length;                                            \
			if (skip_ >= l_) {                                                         \
				skip_ -= l_;                                                       \
				continue;                                                          \
			}                                                                          \
			uint8_t *p_ = (uint8_t *)(uintptr_t)(sge)[i_].addr + skip_;                \
			uint32_t n_ = l_ - skip_ < left_ ? l_ - skip_ : left_;                     \
			body;                                                                      \
			skip_ = 0;                                                                 \
			left_ -= n_;                                                               \
		}                                                                                  \
	} while (0)

void xr_sgl_copy_out(const struct xr_sge *sge, int num_sge, uint32_t offset, uint8_t *dst,
		     uint32_t len)
{
	SGL_WALK(sge, num_sge, offset, len, {
		memcpy(dst, p_, n_);
		dst += n_;
	});
}

void xr_sgl_copy_in(const struct xr_sge *sge, int num_sge, uint32_t offset, const uint8_t *src,
		    uint32_t len)
{
	SGL_WALK(sge, num_sge, offset, len, {
		memcpy(p_, src, n_);
		src += n_;
	});
}
