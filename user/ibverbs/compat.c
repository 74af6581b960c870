/* SPDX-License-Identifier: MIT */
/*
 * The IBVERBS_1.0 symbols rdma-core still carries for binaries linked
 * against libibverbs 1.0 (2006), whose structures differ from today's, and
 * IBVERBS_1.1's ibv_register_driver for providers of that era. No device
 * is offered through the old ABI: its device list is empty, so no old-ABI
 * object can exist, and any verb on one fails with EOPNOTSUPP by the
 * verb's convention. ibv_register_driver ignores the provider: xroce loads
 * none.
 */
#include <stdlib.h>

#include "shim.h"

#define V1_0(name) __attribute__((symver(#name "@IBVERBS_1.0"))) xv_v1_0_##name

#define V1_0_VOID(name)                                                                            \
	void V1_0(name)(void);                                                                     \
	void V1_0(name)(void)                                                                      \
	{                                                                                          \
	}

void **V1_0(ibv_get_device_list)(int *num_devices);
void **V1_0(ibv_get_device_list)(int *num_devices)
{
	if (num_devices)
		*num_devices = 0;
	return calloc(1, sizeof(void *));
}

void V1_0(ibv_free_device_list)(void **list);
void V1_0(ibv_free_device_list)(void **list)
{
	free(list);
}

uint64_t V1_0(ibv_get_device_guid)(void);
uint64_t V1_0(ibv_get_device_guid)(void)
{
	errno = EOPNOTSUPP;
	return 0;
}

XV_FAILS_NULL(V1_0(ibv_get_device_name))
XV_FAILS_NULL(V1_0(ibv_open_device))
XV_FAILS_NULL(V1_0(ibv_alloc_pd))
XV_FAILS_NULL(V1_0(ibv_reg_mr))
XV_FAILS_NULL(V1_0(ibv_create_ah))
XV_FAILS_NULL(V1_0(ibv_create_cq))
XV_FAILS_NULL(V1_0(ibv_create_qp))
XV_FAILS_NULL(V1_0(ibv_create_srq))

XV_FAILS_ERRNO(V1_0(ibv_close_device))
XV_FAILS_ERRNO(V1_0(ibv_query_device))
XV_FAILS_ERRNO(V1_0(ibv_query_port))
XV_FAILS_ERRNO(V1_0(ibv_query_gid))
XV_FAILS_ERRNO(V1_0(ibv_query_pkey))
XV_FAILS_ERRNO(V1_0(ibv_dealloc_pd))
XV_FAILS_ERRNO(V1_0(ibv_dereg_mr))
XV_FAILS_ERRNO(V1_0(ibv_destroy_ah))
XV_FAILS_ERRNO(V1_0(ibv_resize_cq))
XV_FAILS_ERRNO(V1_0(ibv_destroy_cq))
XV_FAILS_ERRNO(V1_0(ibv_modify_qp))
XV_FAILS_ERRNO(V1_0(ibv_query_qp))
XV_FAILS_ERRNO(V1_0(ibv_destroy_qp))
XV_FAILS_ERRNO(V1_0(ibv_modify_srq))
XV_FAILS_ERRNO(V1_0(ibv_query_srq))
XV_FAILS_ERRNO(V1_0(ibv_destroy_srq))
XV_FAILS_ERRNO(V1_0(ibv_attach_mcast))
XV_FAILS_ERRNO(V1_0(ibv_detach_mcast))

XV_FAILS_MINUS1(V1_0(ibv_get_async_event))
XV_FAILS_MINUS1(V1_0(ibv_get_cq_event))

V1_0_VOID(ibv_ack_async_event)
V1_0_VOID(ibv_ack_cq_events)

void ibv_register_driver_1_1(const char *name, void *init_func)
    __attribute__((symver("ibv_register_driver@IBVERBS_1.1")));
void ibv_register_driver_1_1(const char *name, void *init_func)
{
	(void)name, (void)init_func;
}
