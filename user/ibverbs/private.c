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
 * not ship, and no caller here passes them anything: their arguments are
 * left undeclared.
 */
#include <stdbool.h>

#include "shim.h"

#define UVERBS_COMMAND(name)                                                                       \
	int name(void);                                                                            \
	int name(void)                                                                             \
	{                                                                                          \
		return EOPNOTSUPP;                                                                 \
	}

UVERBS_COMMAND(ibv_cmd_advise_mr)
UVERBS_COMMAND(ibv_cmd_alloc_dm)
UVERBS_COMMAND(ibv_cmd_alloc_mw)
UVERBS_COMMAND(ibv_cmd_alloc_pd)
UVERBS_COMMAND(ibv_cmd_attach_mcast)
UVERBS_COMMAND(ibv_cmd_close_xrcd)
UVERBS_COMMAND(ibv_cmd_create_ah)
UVERBS_COMMAND(ibv_cmd_create_counters)
UVERBS_COMMAND(ibv_cmd_create_cq)
UVERBS_COMMAND(ibv_cmd_create_cq_ex)
UVERBS_COMMAND(ibv_cmd_create_flow)
UVERBS_COMMAND(ibv_cmd_create_flow_action_esp)
UVERBS_COMMAND(ibv_cmd_create_qp)
UVERBS_COMMAND(ibv_cmd_create_qp_ex)
UVERBS_COMMAND(ibv_cmd_create_qp_ex2)
UVERBS_COMMAND(ibv_cmd_create_rwq_ind_table)
UVERBS_COMMAND(ibv_cmd_create_srq)
UVERBS_COMMAND(ibv_cmd_create_srq_ex)
UVERBS_COMMAND(ibv_cmd_create_wq)
UVERBS_COMMAND(ibv_cmd_dealloc_mw)
UVERBS_COMMAND(ibv_cmd_dealloc_pd)
UVERBS_COMMAND(ibv_cmd_dereg_mr)
UVERBS_COMMAND(ibv_cmd_destroy_ah)
UVERBS_COMMAND(ibv_cmd_destroy_counters)
UVERBS_COMMAND(ibv_cmd_destroy_cq)
UVERBS_COMMAND(ibv_cmd_destroy_flow)
UVERBS_COMMAND(ibv_cmd_destroy_flow_action)
UVERBS_COMMAND(ibv_cmd_destroy_qp)
UVERBS_COMMAND(ibv_cmd_destroy_rwq_ind_table)
UVERBS_COMMAND(ibv_cmd_destroy_srq)
UVERBS_COMMAND(ibv_cmd_destroy_wq)
UVERBS_COMMAND(ibv_cmd_detach_mcast)
UVERBS_COMMAND(ibv_cmd_free_dm)
UVERBS_COMMAND(ibv_cmd_get_context)
UVERBS_COMMAND(ibv_cmd_modify_cq)
UVERBS_COMMAND(ibv_cmd_modify_flow_action_esp)
UVERBS_COMMAND(ibv_cmd_modify_qp)
UVERBS_COMMAND(ibv_cmd_modify_qp_ex)
UVERBS_COMMAND(ibv_cmd_modify_srq)
UVERBS_COMMAND(ibv_cmd_modify_wq)
UVERBS_COMMAND(ibv_cmd_open_qp)
UVERBS_COMMAND(ibv_cmd_open_xrcd)
UVERBS_COMMAND(ibv_cmd_poll_cq)
UVERBS_COMMAND(ibv_cmd_post_recv)
UVERBS_COMMAND(ibv_cmd_post_send)
UVERBS_COMMAND(ibv_cmd_post_srq_recv)
UVERBS_COMMAND(ibv_cmd_query_context)
UVERBS_COMMAND(ibv_cmd_query_device_any)
UVERBS_COMMAND(ibv_cmd_query_mr)
UVERBS_COMMAND(ibv_cmd_query_port)
UVERBS_COMMAND(ibv_cmd_query_qp)
UVERBS_COMMAND(ibv_cmd_query_srq)
UVERBS_COMMAND(ibv_cmd_read_counters)
UVERBS_COMMAND(ibv_cmd_reg_dm_mr)
UVERBS_COMMAND(ibv_cmd_reg_dmabuf_mr)
UVERBS_COMMAND(ibv_cmd_reg_mr)
UVERBS_COMMAND(ibv_cmd_req_notify_cq)
UVERBS_COMMAND(ibv_cmd_rereg_mr)
UVERBS_COMMAND(ibv_cmd_resize_cq)
UVERBS_COMMAND(execute_ioctl)

/* Set by rdma-core from the environment; read by providers on destroy. */
bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	(void)ops;
}

void *_verbs_init_and_alloc_context(void);
void *_verbs_init_and_alloc_context(void)
{
	return xv_null(EOPNOTSUPP);
}

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
