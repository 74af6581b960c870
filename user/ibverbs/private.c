/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' IBVERBS_PRIVATE_34 interface, the one rdma-core's providers
 * are built against. Debian's libmlx5.so.1 and libefa.so.1, which perftest
 * and pyverbs link, bind these when they load, and register their drivers
 * from a constructor. xroce loads no provider and hands providers no
 * device (struct xv_device keeps their ops slot NULL), so the registration
 * is ignored and every command into the kernel's uverbs fails with
 * EOPNOTSUPP, by the convention of rdma-core's (0 or an errno value).
 * rdma-core declares these in its <infiniband/driver.h>, which Debian does
 * not ship.
 */
#include <stdbool.h>

#include "shim.h"

XV_FAILS_ERRNO(ibv_cmd_advise_mr)
XV_FAILS_ERRNO(ibv_cmd_alloc_dm)
XV_FAILS_ERRNO(ibv_cmd_alloc_mw)
XV_FAILS_ERRNO(ibv_cmd_alloc_pd)
XV_FAILS_ERRNO(ibv_cmd_attach_mcast)
XV_FAILS_ERRNO(ibv_cmd_close_xrcd)
XV_FAILS_ERRNO(ibv_cmd_create_ah)
XV_FAILS_ERRNO(ibv_cmd_create_counters)
XV_FAILS_ERRNO(ibv_cmd_create_cq)
XV_FAILS_ERRNO(ibv_cmd_create_cq_ex)
XV_FAILS_ERRNO(ibv_cmd_create_flow)
XV_FAILS_ERRNO(ibv_cmd_create_flow_action_esp)
XV_FAILS_ERRNO(ibv_cmd_create_qp)
XV_FAILS_ERRNO(ibv_cmd_create_qp_ex)
XV_FAILS_ERRNO(ibv_cmd_create_qp_ex2)
XV_FAILS_ERRNO(ibv_cmd_create_rwq_ind_table)
XV_FAILS_ERRNO(ibv_cmd_create_srq)
XV_FAILS_ERRNO(ibv_cmd_create_srq_ex)
XV_FAILS_ERRNO(ibv_cmd_create_wq)
XV_FAILS_ERRNO(ibv_cmd_dealloc_mw)
XV_FAILS_ERRNO(ibv_cmd_dealloc_pd)
XV_FAILS_ERRNO(ibv_cmd_dereg_mr)
XV_FAILS_ERRNO(ibv_cmd_destroy_ah)
XV_FAILS_ERRNO(ibv_cmd_destroy_counters)
XV_FAILS_ERRNO(ibv_cmd_destroy_cq)
XV_FAILS_ERRNO(ibv_cmd_destroy_flow)
XV_FAILS_ERRNO(ibv_cmd_destroy_flow_action)
XV_FAILS_ERRNO(ibv_cmd_destroy_qp)
XV_FAILS_ERRNO(ibv_cmd_destroy_rwq_ind_table)
XV_FAILS_ERRNO(ibv_cmd_destroy_srq)
XV_FAILS_ERRNO(ibv_cmd_destroy_wq)
XV_FAILS_ERRNO(ibv_cmd_detach_mcast)
XV_FAILS_ERRNO(ibv_cmd_free_dm)
XV_FAILS_ERRNO(ibv_cmd_get_context)
XV_FAILS_ERRNO(ibv_cmd_modify_cq)
XV_FAILS_ERRNO(ibv_cmd_modify_flow_action_esp)
XV_FAILS_ERRNO(ibv_cmd_modify_qp)
XV_FAILS_ERRNO(ibv_cmd_modify_qp_ex)
XV_FAILS_ERRNO(ibv_cmd_modify_srq)
XV_FAILS_ERRNO(ibv_cmd_modify_wq)
XV_FAILS_ERRNO(ibv_cmd_open_qp)
XV_FAILS_ERRNO(ibv_cmd_open_xrcd)
XV_FAILS_ERRNO(ibv_cmd_poll_cq)
XV_FAILS_ERRNO(ibv_cmd_post_recv)
XV_FAILS_ERRNO(ibv_cmd_post_send)
XV_FAILS_ERRNO(ibv_cmd_post_srq_recv)
XV_FAILS_ERRNO(ibv_cmd_query_context)
XV_FAILS_ERRNO(ibv_cmd_query_device_any)
XV_FAILS_ERRNO(ibv_cmd_query_mr)
XV_FAILS_ERRNO(ibv_cmd_query_port)
XV_FAILS_ERRNO(ibv_cmd_query_qp)
XV_FAILS_ERRNO(ibv_cmd_query_srq)
XV_FAILS_ERRNO(ibv_cmd_read_counters)
XV_FAILS_ERRNO(ibv_cmd_reg_dm_mr)
XV_FAILS_ERRNO(ibv_cmd_reg_dmabuf_mr)
XV_FAILS_ERRNO(ibv_cmd_reg_mr)
XV_FAILS_ERRNO(ibv_cmd_req_notify_cq)
XV_FAILS_ERRNO(ibv_cmd_rereg_mr)
XV_FAILS_ERRNO(ibv_cmd_resize_cq)
XV_FAILS_ERRNO(execute_ioctl)

/* Set by rdma-core from the environment; read by providers on destroy. */
bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	(void)ops;
}

XV_FAILS_NULL(_verbs_init_and_alloc_context)

struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	(void)device, (void)private_data;
	return xv_null(EOPNOTSUPP);
}

void verbs_uninit_context(void *context);
void verbs_uninit_context(void *context)
{
	(void)context;
}

void verbs_set_ops(void *context, const void *ops);
void verbs_set_ops(void *context, const void *ops)
{
	(void)context, (void)ops;
}

void verbs_init_cq(void *cq, void *context, void *channel, void *cq_context);
void verbs_init_cq(void *cq, void *context, void *channel, void *cq_context)
{
	(void)cq, (void)context, (void)channel, (void)cq_context;
}

/* No linked command buffers exist, so the count is the caller's own. */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

/* Providers' sysfs reads under their own device's directory: there is none. */
int ibv_read_ibdev_sysfs_file(void);
int ibv_read_ibdev_sysfs_file(void)
{
	errno = ENOENT;
	return -1;
}

/* Providers' debug log; xroce keeps none for them. */
void __verbs_log(void *context, int level, const char *fmt, ...);
void __verbs_log(void *context, int level, const char *fmt, ...)
{
	(void)context, (void)level, (void)fmt;
}
