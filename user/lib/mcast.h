/* SPDX-License-Identifier: MIT */
/* The interface's group memberships and XDP's group table (mcast.c); dev->lock held. */
#ifndef XROCE_MCAST_H
#define XROCE_MCAST_H

#include <stdint.h>

#include "xroce/xroce.h"

struct xr_device;

/* The first QP attached to core group index group: join gid and let XDP steer it. */
int xr_mcast_join(struct xr_device *dev, int group, const union xr_gid *gid, uint32_t nqps);
/* The number of QPs attached changed (shown in the group table). */
void xr_mcast_count(struct xr_device *dev, const union xr_gid *gid, uint32_t nqps);
/* The last QP detached: XDP drops the group again and the interface leaves it. */
void xr_mcast_leave(struct xr_device *dev, int group, const union xr_gid *gid);
/* Leaves every group and empties the group table (open and close). */
void xr_mcast_reset(struct xr_device *dev);

#endif /* XROCE_MCAST_H */
