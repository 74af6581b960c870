/* SPDX-License-Identifier: MIT */
/*
 * What a device says of itself: ibv_query_device, ibv_query_port, the GID
 * and P_Key tables, answered from libxroce's attributes of the open device.
 */
#include <endian.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "shim.h"

#ifndef XROCE_VERSION
#error "XROCE_VERSION (the release) comes from the Makefile"
#endif

/* libibverbs' private enum ibv_gid_type_sysfs, as ibv_query_gid_type answers. */
#define XV_GID_TYPE_SYSFS_ROCE_V2 1

/* RoCE has one partition key, the default, full member. */
#define XV_DEFAULT_PKEY 0xffff

/* What libxroce delivers through this library, in ibv_device_cap_flags. */
#define XV_DEVICE_CAP_FLAGS                                                                        \
	(IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_SYS_IMAGE_GUID |         \
	 IBV_DEVICE_RC_RNR_NAK_GEN)

static int clamp_int(uint64_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

static int fill_device_attr(struct ibv_context *context, struct ibv_device_attr *out)
{
	struct xr_device_attr a;
	int err;

	err = xr_query_device(xv_ctx(context)->xr, &a);
	if (err)
		return xv_errno(err);
	memset(out, 0, sizeof(*out));
	snprintf(out->fw_ver, sizeof(out->fw_ver), "xroce %s", XROCE_VERSION);
	out->node_guid = ibv_get_device_guid(context->device);
	out->sys_image_guid = out->node_guid;
	out->max_mr_size = a.max_mr_size;
	/* Fast registration takes any power of two from 4 KiB up. */
	out->page_size_cap = ~(uint64_t)4095;
	out->max_qp = clamp_int(a.max_qp);
	out->max_qp_wr = clamp_int(a.max_qp_wr);
	out->device_cap_flags = XV_DEVICE_CAP_FLAGS;
	out->max_sge = clamp_int(a.max_sge);
	out->max_sge_rd = clamp_int(a.max_sge);
	/* CQs and PDs are bounded by memory only; MRs by the key table (index 0 is no key). */
	out->max_cq = INT_MAX;
	out->max_pd = INT_MAX;
	out->max_mr = XR_MAX_KEYS - 1;
	out->max_cqe = clamp_int(a.max_cqe);
	out->max_qp_rd_atom = clamp_int(a.max_qp_rd_atom);
	out->max_qp_init_rd_atom = clamp_int(a.max_qp_init_rd_atom);
	out->max_res_rd_atom = clamp_int((uint64_t)a.max_qp_rd_atom * a.max_qp);
	/* The engine runs every atomic of the device, one at a time. */
	out->atomic_cap = IBV_ATOMIC_HCA;
	out->max_mcast_grp = clamp_int(a.max_mcast_grp);
	out->max_mcast_qp_attach = clamp_int(a.max_mcast_qp_attach);
	out->max_total_mcast_qp_attach = clamp_int(a.max_total_mcast_qp_attach);
	out->max_pkeys = 1;
	out->phys_port_cnt = 1;
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	return fill_device_attr(context, device_attr);
}

int xv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	int err;

	if ((input && input->comp_mask) || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(attr, 0, attr_size);
	err = fill_device_attr(context, &attr->orig_attr);
	if (err)
		return err;
	if (attr_size >= offsetof(struct ibv_device_attr_ex, device_cap_flags_ex) +
			     sizeof(attr->device_cap_flags_ex))
		attr->device_cap_flags_ex = XV_DEVICE_CAP_FLAGS;
	if (attr_size >=
	    offsetof(struct ibv_device_attr_ex, phys_port_cnt_ex) + sizeof(attr->phys_port_cnt_ex))
		attr->phys_port_cnt_ex = 1;
	return 0;
}

int xv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		  size_t attr_len)
{
	struct ibv_port_attr full = {0};
	struct xr_port_attr a;
	int err;

	err = xr_query_port(xv_ctx(context)->xr, port_num, &a);
	if (err)
		return xv_errno(err);
	full.state = (enum ibv_port_state)a.state;
	full.max_mtu = (enum ibv_mtu)a.max_mtu;
	full.active_mtu = (enum ibv_mtu)a.active_mtu;
	full.gid_tbl_len = a.gid_tbl_len;
	full.port_cap_flags = a.port_cap_flags;
	full.max_msg_sz = a.max_msg_sz;
	full.bad_pkey_cntr = a.bad_pkey_cntr;
	full.qkey_viol_cntr = a.qkey_viol_cntr;
	full.pkey_tbl_len = a.pkey_tbl_len;
	full.lid = a.lid;
	full.sm_lid = a.sm_lid;
	/* One data VL: what RoCE ports report, and what ibv_devinfo takes as valid. */
	full.max_vl_num = 1;
	full.active_width = a.active_width;
	full.active_speed = a.active_speed;
	full.phys_state = a.phys_state;
	full.link_layer = a.link_layer;
	/* Every RoCE packet carries a GRH: the kernel reports this for RoCE ports. */
	full.flags = IBV_QPF_GRH_REQUIRED;
	memcpy(attr, &full, attr_len < sizeof(full) ? attr_len : sizeof(full));
	return 0;
}

#undef ibv_query_port
/* The entry point of binaries that predate the verbs_context op: the fields up to flags. */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	return xv_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			     offsetof(struct ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	union xr_gid g;
	int err;

	if (port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	err = xr_query_gid(xv_ctx(context)->xr, index, &g);
	if (err) {
		errno = xv_errno(err);
		return -1;
	}
	memcpy(gid->raw, g.raw, sizeof(gid->raw));
	return 0;
}

/* Every GID of xroce is RoCE v2, on the device's interface. */
int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct xv_context *ctx = xv_ctx(context);
	union xr_gid g;
	int err;

	if (flags || port_num != 1 || entry_size < sizeof(*entry) || gid_index > INT_MAX)
		return EINVAL;
	err = xr_query_gid(ctx->xr, (int)gid_index, &g);
	if (err)
		return xv_errno(err);
	memset(entry, 0, entry_size);
	memcpy(entry->gid.raw, g.raw, sizeof(entry->gid.raw));
	entry->gid_index = gid_index;
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = if_nametoindex(ctx->dev->ifname);
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct xr_device_attr a;
	size_t n;
	int err;

	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	err = xr_query_device(xv_ctx(context)->xr, &a);
	if (err)
		return err;
	n = (size_t)a.num_gids;
	if (n > max_entries)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct ibv_gid_entry *e = (void *)((char *)entries + i * entry_size);

		err = _ibv_query_gid_ex(context, 1, (uint32_t)i, e, 0, entry_size);
		if (err)
			return -err;
	}
	return (ssize_t)n;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       unsigned int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       unsigned int *type)
{
	struct ibv_gid_entry entry;
	int err;

	err = _ibv_query_gid_ex(context, port_num, index, &entry, 0, sizeof(entry));
	if (err) {
		errno = err;
		return -1;
	}
	*type = XV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(XV_DEFAULT_PKEY);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	if (port_num != 1)
		return -EINVAL;
	/* The membership bit (15) does not take part in matching. */
	return (be16toh(pkey) & 0x7fff) == (XV_DEFAULT_PKEY & 0x7fff) ? 0 : -ENOENT;
}
