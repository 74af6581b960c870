/* SPDX-License-Identifier: MIT */
/*
 * Protection domains, the key table that memory regions and windows share,
 * memory regions (registered, or made valid by fast registration), and the
 * local checks and copies every access goes through. A fast-registration
 * region translates its addresses page by page; a registered one is the
 * process's own memory at the addresses it names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/*
 * A key is its table index (bits 31:20), random bits (19:8) and a key byte
 * (7:0). The key byte belongs to the owner, as in verbs (a window's bind
 * moves it to the next value, ib_update_fast_reg_key sets it), so it keeps
 * nothing secret for long; the index finds the object in one step. The bits
 * between are drawn anew for every key, and differently for an MR's lkey
 * and rkey: a peer that knows which indexes are in use still has 2^12 values
 * to guess per key (2^20 while the key byte is the random one it started
 * with), a wrong guess fails the access and the connection, and an lkey
 * reaches nothing remotely.
 */
#define KEY_RANDOM_SHIFT 8
#define KEY_RANDOM_MASK (((1u << XR_KEY_INDEX_SHIFT) - 1) & ~XR_KEY_BYTE)
#define MIN_PAGE_SHIFT 12
#define MAX_PAGE_SHIFT 30

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

/* ---- the key table ---------------------------------------------------- */

/* xorshift64*: keys and QPNs need to be unpredictable to a peer, not cryptographic. */
uint64_t xr_core_random(struct xr_core *core)
{
	uint64_t x = core->rng ? core->rng : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	core->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

int xr_core_new_key(struct xr_core *core, enum xr_key_kind kind, void *obj, uint32_t *key)
{
	uint64_t r = xr_core_random(core);
	/* Index 0 is never used: a zeroed key names nothing. */
	uint32_t start = 1 + (uint32_t)(r % (XR_MAX_KEYS - 1));

	for (uint32_t n = 0; n < XR_MAX_KEYS - 1; n++) {
		uint32_t idx = 1 + (start - 1 + n) % (XR_MAX_KEYS - 1);

		if (core->keys[idx].kind != XR_KEY_FREE)
			continue;
		core->keys[idx].kind = kind;
		core->keys[idx].obj = obj;
		*key = idx << XR_KEY_INDEX_SHIFT | ((uint32_t)(r >> 24) & KEY_RANDOM_MASK) |
		       (uint32_t)(r >> 56);
		return 0;
	}
	return -ENOMEM;
}

/* Key with other random bits, never its own: an MR's rkey from its lkey. */
static uint32_t sibling_key(struct xr_core *core, uint32_t key)
{
	uint32_t change =
	    1 + (uint32_t)(xr_core_random(core) % (KEY_RANDOM_MASK >> KEY_RANDOM_SHIFT));

	return key ^ change << KEY_RANDOM_SHIFT;
}

void xr_core_free_key(struct xr_core *core, uint32_t key)
{
	uint32_t idx = xr_key_index(key);

	if (idx && idx < XR_MAX_KEYS)
		core->keys[idx] = (struct xr_key_slot){0};
}

void *xr_core_key_obj(struct xr_core *core, uint32_t key, enum xr_key_kind kind)
{
	uint32_t idx = xr_key_index(key);

	if (idx == 0 || idx >= XR_MAX_KEYS || core->keys[idx].kind != kind)
		return NULL;
	return core->keys[idx].obj;
}

/* ---- memory regions ------------------------------------------------------ */

static const int known_access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
				XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC | XR_ACCESS_MW_BIND;

/* As in verbs: remote write or atomic access requires local write. */
static bool access_ok(int access)
{
	if (access & ~known_access)
		return false;
	return !(access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) ||
	       (access & XR_ACCESS_LOCAL_WRITE);
}

static struct xr_mr_impl *new_mr(struct xr_pd *pd, enum xr_mr_kind kind, int *err)
{
	struct xr_mr_impl *mr = calloc(1, sizeof(*mr));

	*err = -ENOMEM;
	if (!mr)
		return NULL;
	*err = xr_core_new_key(pd->core, XR_KEY_MR, mr, &mr->lkey);
	if (*err) {
		free(mr);
		return NULL;
	}
	mr->rkey = sibling_key(pd->core, mr->lkey);
	mr->core = pd->core;
	mr->kind = kind;
	mr->pub.pd = pd;
	mr->pub.lkey = mr->lkey;
	mr->pub.rkey = mr->rkey;
	pd->refs++;
	return mr;
}

int xr_core_check_reg_mr(const void *addr, size_t length, int access)
{
	if (!access_ok(access) || (!addr && length) || length > UINT32_MAX)
		return -EINVAL;
	return (uintptr_t)addr + length < (uintptr_t)addr ? -EINVAL : 0;
}

struct xr_mr *xr_core_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access, int *err)
{
	struct xr_mr_impl *mr;

	*err = xr_core_check_reg_mr(addr, length, access);
	if (*err)
		return NULL;
	mr = new_mr(pd, XR_MR_USER, err);
	if (!mr)
		return NULL;
	mr->state = XR_MEM_VALID;
	mr->access = mr->pub.access = access;
	mr->iova = (uintptr_t)addr;
	mr->length = length;
	mr->pub.addr = addr;
	mr->pub.length = length;
	*err = 0;
	return &mr->pub;
}

struct xr_mr *xr_core_alloc_mr(struct xr_pd *pd, uint32_t max_num_sg, int *err)
{
	struct xr_mr_impl *mr;

	*err = -EINVAL;
	if (max_num_sg == 0 || max_num_sg > XR_MAX_FAST_REG_PAGES)
		return NULL;
	mr = new_mr(pd, XR_MR_FAST_REG, err);
	if (!mr)
		return NULL;
	mr->max_pages = max_num_sg;
	mr->map.pages = calloc(max_num_sg, sizeof(uint64_t));
	mr->staged.pages = calloc(max_num_sg, sizeof(uint64_t));
	if (!mr->map.pages || !mr->staged.pages) {
		*err = -ENOMEM;
		xr_core_dereg_mr(&mr->pub);
		return NULL;
	}
	mr->state = XR_MEM_INVALID;
	*err = 0;
	return &mr->pub;
}

int xr_core_map_mr_sg(struct xr_mr *pub, const struct xr_sge *sg, int sg_nents,
		      const uint64_t *iova, unsigned int page_size)
{
	struct xr_mr_impl *mr = xr_mr_impl(pub);
	struct xr_page_map *m = &mr->staged;
	uint64_t mask = (uint64_t)page_size - 1, total = 0;
	uint32_t shift = 0, npages = 0;

	if (mr->kind != XR_MR_FAST_REG || sg_nents <= 0 || !sg)
		return -EINVAL;
	while ((1ull << shift) < page_size)
		shift++;
	if ((1ull << shift) != page_size || shift < MIN_PAGE_SHIFT || shift > MAX_PAGE_SHIFT)
		return -EINVAL;
	/*
	 * Everything is checked before the map changes: a refused call leaves
	 * what the next REG_MR takes as it was. Pages are whole between ranges:
	 * only the ends may be partial.
	 */
	for (int i = 0; i < sg_nents; i++) {
		uint64_t start = sg[i].addr, end = start + sg[i].length, pages;

		if (!sg[i].length || end < start || (i > 0 && (start & mask)) ||
		    (i + 1 < sg_nents && (end & mask)))
			return -EINVAL;
		pages = (((end + mask) & ~mask) - (start & ~mask)) >> shift;
		total += sg[i].length;
		if (pages > mr->max_pages - npages || total > UINT32_MAX)
			return -EINVAL;
		npages += (uint32_t)pages;
	}
	/* An aligned atomic must stay aligned and inside one page once translated. */
	if (iova && (*iova & mask) != (sg[0].addr & mask))
		return -EINVAL;
	npages = 0;
	for (int i = 0; i < sg_nents; i++)
		for (uint64_t page = sg[i].addr & ~mask; page < sg[i].addr + sg[i].length;
		     page += page_size)
			m->pages[npages++] = page;
	m->npages = npages;
	m->page_shift = shift;
	m->page_off = (uint32_t)(sg[0].addr & mask);
	m->iova = iova ? *iova : sg[0].addr;
	m->length = total;
	pub->addr = (void *)(uintptr_t)m->iova;
	pub->length = total;
	return sg_nents;
}

int xr_core_dereg_mr(struct xr_mr *pub)
{
	struct xr_mr_impl *mr = xr_mr_impl(pub);

	if (mr->mw_bound)
		return -EBUSY;
	xr_core_free_key(mr->core, mr->lkey);
	pub->pd->refs--;
	free(mr->map.pages);
	free(mr->staged.pages);
	free(mr);
	return 0;
}

struct xr_mr_impl *xr_core_mr_lookup(struct xr_core *core, uint32_t key)
{
	struct xr_mr_impl *mr = xr_core_key_obj(core, key, XR_KEY_MR);

	return (mr && mr->lkey == key && mr->state == XR_MEM_VALID) ? mr : NULL;
}

bool xr_mr_names_key(const struct xr_mr_impl *mr, uint32_t key)
{
	return !((key ^ mr->lkey) & ~XR_KEY_BYTE) || !((key ^ mr->rkey) & ~XR_KEY_BYTE);
}

void xr_mr_set_key_byte(struct xr_mr_impl *mr, uint8_t key_byte)
{
	mr->lkey = (mr->lkey & ~XR_KEY_BYTE) | key_byte;
	mr->rkey = (mr->rkey & ~XR_KEY_BYTE) | key_byte;
}

bool xr_mr_covers(const struct xr_mr_impl *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->iova && len <= mr->length && addr - mr->iova <= mr->length - len;
}

/* Where addr is in memory, and how many bytes from there are contiguous. */
static uint8_t *mr_at(const struct xr_mr_impl *mr, uint64_t addr, uint64_t *contig)
{
	const struct xr_page_map *m = &mr->map;
	uint64_t off, in_page;

	if (mr->kind == XR_MR_USER) {
		*contig = mr->iova + mr->length - addr;
		return (uint8_t *)(uintptr_t)addr;
	}
	off = addr - m->iova + m->page_off;
	in_page = off & ((1ull << m->page_shift) - 1);
	*contig = (1ull << m->page_shift) - in_page;
	return (uint8_t *)(uintptr_t)(m->pages[off >> m->page_shift] + in_page);
}

void xr_mr_copy_in(const struct xr_mr_impl *mr, uint64_t addr, const void *src, uint32_t len)
{
	const uint8_t *s = src;

	while (len) {
		uint64_t contig;
		uint8_t *p = mr_at(mr, addr, &contig);
		uint32_t n = contig < len ? (uint32_t)contig : len;

		memcpy(p, s, n);
		s += n;
		addr += n;
		len -= n;
	}
}

void xr_mr_copy_out(const struct xr_mr_impl *mr, uint64_t addr, struct xr_pkt_out *out,
		    uint32_t off, uint32_t len)
{
	while (len) {
		uint64_t contig;
		const uint8_t *p = mr_at(mr, addr, &contig);
		uint32_t n = contig < len ? (uint32_t)contig : len;

		xr_pkt_put_payload(out, off, p, n);
		off += n;
		addr += n;
		len -= n;
	}
}

uint64_t *xr_mr_u64(const struct xr_mr_impl *mr, uint64_t addr)
{
	uint64_t contig;

	return (uint64_t *)mr_at(mr, addr, &contig);
}

/* ---- local access --------------------------------------------------------- */

enum xr_wc_status xr_core_check_sge(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int need_access)
{
	struct xr_mr_impl *mr;

	if (sge->length == 0)
		return XR_WC_SUCCESS;
	mr = xr_core_mr_lookup(core, sge->lkey);
	if (!mr || mr->pub.pd != pd || (mr->access & need_access) != need_access)
		return XR_WC_LOC_PROT_ERR;
	if (!xr_mr_covers(mr, sge->addr, sge->length))
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

/*
 * Walks the list from offset, running body with the span's MR (mr_), its
 * address (addr_), length (n_) and the span's offset into the copy (done_).
 * The list was checked: every MR is there.
 */
#define SGL_WALK(core, sge, num_sge, offset, len, body)                                            \
	do {                                                                                       \
		uint32_t skip_ = (offset), left_ = (len), done_ = 0;                               \
		for (int i_ = 0; i_ < (num_sge) && left_; i_++) {                                  \
			uint32_t l_ = (sge)[i_].length;                                            \
			if (skip_ >= l_) {                                                         \
				skip_ -= l_;                                                       \
				continue;                                                          \
			}                                                                          \
			const struct xr_mr_impl *mr_ = xr_core_mr_lookup(core, (sge)[i_].lkey);    \
			uint64_t addr_ = (sge)[i_].addr + skip_;                                   \
			uint32_t n_ = l_ - skip_ < left_ ? l_ - skip_ : left_;                     \
			if (mr_)                                                                   \
				body;                                                              \
			skip_ = 0;                                                                 \
			left_ -= n_;                                                               \
			done_ += n_;                                                               \
		}                                                                                  \
	} while (0)

void xr_sgl_copy_out(struct xr_core *core, const struct xr_sge *sge, int num_sge, uint32_t offset,
		     struct xr_pkt_out *out, uint32_t len)
{
	SGL_WALK(core, sge, num_sge, offset, len, xr_mr_copy_out(mr_, addr_, out, done_, n_));
}

void xr_sgl_copy_in(struct xr_core *core, const struct xr_sge *sge, int num_sge, uint32_t offset,
		    const uint8_t *src, uint32_t len)
{
	SGL_WALK(core, sge, num_sge, offset, len, xr_mr_copy_in(mr_, addr_, src + done_, n_));
}
