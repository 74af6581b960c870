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

/* Verbs returning 0 or an errno value. */
#define V1_0_INT(name)                                                                             \
	int V1_0(name)(void);                                                                      \
	int V1_0(name)(void)                                                                       \
	{                                                                                          \
		return EOPNOTSUPP;                                                                 \
	}

/* Verbs returning an object, or NULL with errno set. */
#define V1_0_PTR(name)                                                                             \
	void *V1_0(name)(void);                                                                    \
	void *V1_0(name)(void)                                                                     \
	{                                                                                          \
		return xv_null(EOPNOTSUPP);                                                        \
	}

/* Verbs returning -1 with errno set on failure. */
#define V1_0_MINUS1(name)                                                                          \
	int V1_0(name)(void);                                                                      \
	int V1_0(name)(void)                                                                       \
	{                                                                                          \
		errno = EOPNOTSUPP;                                                                \
		return -1;                                                                         \
	}

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

V1_0_PTR(ibv_get_device_name)
V1_0_PTR(ibv_open_device)
V1_0_PTR(ibv_alloc_pd)
V1_0_PTR(ibv_reg_mr)
V1_0_PTR(ibv_create_ah)
V1_0_PTR(ibv_create_cq)
V1_0_PTR(ibv_create_qp)
V1_0_PTR(ibv_create_srq)

V1_0_INT(ibv_close_device)
V1_0_INT(ibv_query_device)
V1_0_INT(ibv_query_port)
V1_0_INT(ibv_query_gid)
V1_0_INT(ibv_query_pkey)
V1_0_INT(ibv_dealloc_pd)
V1_0_INT(ibv_dereg_mr)
V1_0_INT(ibv_destroy_ah)
V1_0_INT(ibv_resize_cq)
V1_0_INT(ibv_destroy_cq)
V1_0_INT(ibv_modify_qp)
V1_0_INT(ibv_query_qp)
V1_0_INT(ibv_destroy_qp)
V1_0_INT(ibv_modify_srq)
V1_0_INT(ibv_query_srq)
V1_0_INT(ibv_destroy_srq)
V1_0_INT(ibv_attach_mcast)
V1_0_INT(ibv_detach_mcast)

V1_0_MINUS1(ibv_get_async_event)
V1_0_MINUS1(ibv_get_cq_event)

V1_0_VOID(ibv_ack_async_event)
V1_0_VOID(ibv_ack_cq_events)

void ibv_register_driver_1_1(const char *name, void *init_func)
    __attribute__((symver("ibv_register_driver@IBVERBS_1.1")));
void ibv_register_driver_1_1(const char *name, void *init_func)
{
	(void)name, (void)init_func;
}
