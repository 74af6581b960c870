/* SPDX-License-Identifier: MIT */
/*
 * What the C programs of tests/ibverbs share to set up verbs: a monotonic
 * clock for bounded waits, opening a device by name, and the state
 * transitions of RC and UD QPs with the attributes the tests all use (port
 * 1, path MTU 1024, RNR timer 12, timeout 14, seven retries of each kind).
 * Include after check.h: every failure is a CHECK.
 */
#ifndef XROCE_TESTS_IBVERBS_QP_SETUP_H
#define XROCE_TESTS_IBVERBS_QP_SETUP_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static inline struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	CHECK(list != NULL, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	CHECK(ctx != NULL, "no device %s", name);
	return ctx;
}

static inline void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);

	CHECK(ret == 0, "ibv_modify_qp to %s: %s", what, strerror(ret));
}

/* RESET -> INIT, granting the peer access (IBV_ACCESS_REMOTE_*). */
static inline void rc_to_init(struct ibv_qp *qp, unsigned int access, const char *what)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};

	modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, what);
}

/* INIT -> RTR: receives from dest_qpn at dgid, through our GID gid_index. */
static inline void rc_to_rtr(struct ibv_qp *qp, uint32_t dest_qpn, uint32_t rq_psn,
			     const union ibv_gid *dgid, int gid_index, uint8_t max_dest_rd_atomic,
			     const char *what)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = IBV_MTU_1024,
	    .dest_qp_num = dest_qpn,
	    .rq_psn = rq_psn,
	    .max_dest_rd_atomic = max_dest_rd_atomic,
	    .min_rnr_timer = 12,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = *dgid, .sgid_index = (uint8_t)gid_index, .hop_limit = 64}}};

	modify(qp, &a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	       what);
}

/* RTR -> RTS: sends from sq_psn. */
static inline void rc_to_rts(struct ibv_qp *qp, uint32_t sq_psn, uint8_t max_rd_atomic,
			     const char *what)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS,
				.sq_psn = sq_psn,
				.timeout = 14,
				.retry_cnt = 7,
				.rnr_retry = 7,
				.max_rd_atomic = max_rd_atomic};

	modify(qp, &a,
	       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		   IBV_QP_MAX_QP_RD_ATOMIC,
	       what);
}

/* A UD QP's RESET -> INIT, receiving datagrams that carry qkey. */
static inline void ud_to_init(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey};

	modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "UD INIT");
}

/* A UD QP's INIT -> RTR -> RTS. */
static inline void ud_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};

	modify(qp, &a, IBV_QP_STATE, "UD RTR");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS};
	modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTS");
}

#endif /* XROCE_TESTS_IBVERBS_QP_SETUP_H */
