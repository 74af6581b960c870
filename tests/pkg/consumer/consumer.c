/* SPDX-License-Identifier: MIT */
/*
 * A program built the way an application is, against an installed libxroce
 * (`cc consumer.c $(pkg-config --cflags --libs libxroce)`), by
 * tests/pkg/test_install.sh; it lives one folder deeper than tests/NAME/ so
 * that the Makefile never builds it against the source tree.
 *
 *   consumer IFNAME send|recv
 *
 * Two of them, one at each end of a veth pair, connect an RC QP and move one
 * SEND from the sender to the receiver. They talk out of band through stdin
 * and stdout, one line each way at every step:
 *   both:     "qpn=HEX psn=HEX gid=32 HEX DIGITS"
 *   receiver: "ready"  (its QP is in RTR, a receive is posted)
 *   sender:   "done"   (its SEND completed, so the receiver may close)
 * On the way it checks the API's error conventions. Exits 0 only when every
 * call did what libxroce(3) says and the bytes landed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xroce/xroce.h>

#define MSG_LEN 3000 /* more than one 1024-byte packet */
#define COMPLETION_TIMEOUT_MS 10000

struct peer {
	uint32_t qpn;
	uint32_t psn;
	union xr_gid gid;
};

static int failed(const char *what, int err)
{
	fprintf(stderr, "consumer: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static uint8_t pattern_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first IPv4-mapped GID (::ffff:a.b.c.d): the veth's address. */
static int find_ipv4_gid(struct xr_device *dev, union xr_gid *gid)
{
	static const uint8_t v4_prefix[12] = {[10] = 0xff, [11] = 0xff};
	struct xr_device_attr attr;
	int err = xr_query_device(dev, &attr);

	if (err)
		return err;
	for (int i = 0; i < attr.num_gids; i++) {
		err = xr_query_gid(dev, i, gid);
		if (err)
			return err;
		if (!memcmp(gid->raw, v4_prefix, sizeof(v4_prefix)))
			return i;
	}
	return -ENOENT;
}

static int send_line(const char *line)
{
	return printf("%s\n", line) < 0 || fflush(stdout) ? -EIO : 0;
}

static int expect_line(const char *want)
{
	char line[128];

	if (!fgets(line, sizeof(line), stdin))
		return -EPIPE;
	line[strcspn(line, "\n")] = '\0';
	return strcmp(line, want) ? -EPROTO : 0;
}

static int exchange(const struct peer *mine, struct peer *remote)
{
	char line[128], hex[33];

	for (int i = 0; i < 16; i++)
		sprintf(&hex[2 * i], "%02x", mine->gid.raw[i]);
	snprintf(line, sizeof(line), "qpn=%x psn=%x gid=%s", mine->qpn, mine->psn, hex);
	if (send_line(line))
		return -EIO;
	if (!fgets(line, sizeof(line), stdin))
		return -EPIPE;
	if (sscanf(line, "qpn=%x psn=%x gid=%32[0-9a-f]", &remote->qpn, &remote->psn, hex) != 3 ||
	    strlen(hex) != 32)
		return -EPROTO;
	for (int i = 0; i < 16; i++) {
		unsigned int byte;

		sscanf(&hex[2 * i], "%2x", &byte);
		remote->gid.raw[i] = (uint8_t)byte;
	}
	return 0;
}

static int to_rts(struct xr_qp *qp, int sgid_index, const struct peer *mine,
		  const struct peer *remote)
{
	struct xr_qp_attr rtr = {
	    .qp_state = XR_QPS_RTR,
	    .path_mtu = XR_MTU_1024,
	    .dest_qp_num = remote->qpn,
	    .rq_psn = remote->psn,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	    .ah_attr = {.grh = {.dgid = remote->gid, .sgid_index = sgid_index, .hop_limit = 64},
			.is_global = 1,
			.port_num = 1},
	};
	struct xr_qp_attr rts = {
	    .qp_state = XR_QPS_RTS,
	    .sq_psn = mine->psn,
	    .timeout = 14,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .max_rd_atomic = 1,
	};
	int err;

	err = xr_modify_qp(qp, &rtr,
			   XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
			       XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	return xr_modify_qp(qp, &rts,
			    XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
				XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC);
}

static int wait_completion(struct xr_cq *cq, struct xr_wc *wc)
{
	int64_t deadline = now_ms() + COMPLETION_TIMEOUT_MS;

	while (now_ms() < deadline) {
		int n = xr_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? n : 0;
		nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
	}
	return -ETIMEDOUT;
}

/* The documented conventions, on objects that exist: errors leave them as they were. */
static int check_error_conventions(struct xr_device *dev, struct xr_qp *qp)
{
	struct xr_qp_attr to_rts = {.qp_state = XR_QPS_RTS};
	struct xr_device *none;
	int err;

	err = xr_modify_qp(qp, &to_rts, XR_QP_STATE);
	if (err != -EINVAL || qp->state != XR_QPS_INIT) {
		fprintf(stderr,
			"consumer: INIT -> RTS returned %d, state %d (want -EINVAL, INIT)\n", err,
			qp->state);
		return 1;
	}
	err = xr_close_device(dev);
	if (err != -EBUSY) {
		fprintf(stderr, "consumer: closing a device with a QP returned %d (want -EBUSY)\n",
			err);
		return 1;
	}
	errno = 0;
	none = xr_open_device("xr-no-such-if", NULL);
	if (none || errno != ENODEV) {
		fprintf(stderr,
			"consumer: opening a missing interface: %p, errno %d (want ENODEV)\n",
			(void *)none, errno);
		return 1;
	}
	return 0;
}

static int run(struct xr_device *dev, uint8_t *buf, bool sender)
{
	struct xr_qp_attr init = {
	    .qp_state = XR_QPS_INIT, .port_num = 1, .qp_access_flags = XR_ACCESS_LOCAL_WRITE};
	struct xr_qp_init_attr qp_attr = {
	    .qp_type = XR_QPT_RC,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct xr_sge sge = {.addr = (uintptr_t)buf, .length = MSG_LEN};
	struct peer mine, remote;
	struct xr_pd *pd = NULL;
	struct xr_mr *mr = NULL;
	struct xr_cq *cq = NULL;
	struct xr_qp *qp = NULL;
	struct xr_wc wc;
	int sgid_index, err, status = 1;

	sgid_index = find_ipv4_gid(dev, &mine.gid);
	if (sgid_index < 0)
		return failed("no IPv4 GID", sgid_index);
	if (!(pd = xr_alloc_pd(dev))) {
		failed("xr_alloc_pd", errno);
		goto out;
	}
	if (!(mr = xr_reg_mr(pd, buf, MSG_LEN, XR_ACCESS_LOCAL_WRITE))) {
		failed("xr_reg_mr", errno);
		goto out;
	}
	if (!(cq = xr_create_cq(dev, 8, NULL))) {
		failed("xr_create_cq", errno);
		goto out;
	}
	qp_attr.send_cq = qp_attr.recv_cq = cq;
	if (!(qp = xr_create_qp(pd, &qp_attr))) {
		failed("xr_create_qp", errno);
		goto out;
	}
	err = xr_modify_qp(qp, &init,
			   XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS);
	if (err) {
		failed("xr_modify_qp to INIT", err);
		goto out;
	}
	if (check_error_conventions(dev, qp))
		goto out;

	sge.lkey = mr->lkey;
	if (!sender) {
		struct xr_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

		err = xr_post_recv(qp, &wr, &bad);
		if (err) {
			failed("xr_post_recv", err);
			goto out;
		}
	}
	mine.qpn = qp->qp_num;
	mine.psn = (uint32_t)now_ms() * 2654435761u & 0xffffff;
	err = exchange(&mine, &remote);
	if (err) {
		failed("out-of-band exchange", err);
		goto out;
	}
	err = to_rts(qp, sgid_index, &mine, &remote);
	if (err) {
		failed("xr_modify_qp to RTR and RTS", err);
		goto out;
	}

	if (sender) {
		struct xr_send_wr wr = {.wr_id = 2,
					.sg_list = &sge,
					.num_sge = 1,
					.opcode = XR_WR_SEND,
					.send_flags = XR_SEND_SIGNALED},
				  *bad;

		for (size_t i = 0; i < MSG_LEN; i++)
			buf[i] = pattern_byte(i);
		if ((err = expect_line("ready"))) {
			failed("waiting for the receiver", err);
			goto out;
		}
		if ((err = xr_post_send(qp, &wr, &bad))) {
			failed("xr_post_send", err);
			goto out;
		}
	} else if ((err = send_line("ready"))) {
		failed("out-of-band ready", err);
		goto out;
	}

	if ((err = wait_completion(cq, &wc))) {
		failed("waiting for the completion", err);
		goto out;
	}
	if (wc.status != XR_WC_SUCCESS || wc.wr_id != (sender ? 2u : 1u) ||
	    wc.opcode != (sender ? XR_WC_SEND : XR_WC_RECV) ||
	    (!sender && wc.byte_len != MSG_LEN)) {
		fprintf(stderr, "consumer: completion wr_id %llu opcode %d status %s, %u bytes\n",
			(unsigned long long)wc.wr_id, wc.opcode, xr_wc_status_str(wc.status),
			wc.byte_len);
		goto out;
	}
	if (sender) {
		err = send_line("done");
	} else {
		for (size_t i = 0; i < MSG_LEN; i++)
			if (buf[i] != pattern_byte(i)) {
				fprintf(stderr, "consumer: byte %zu is 0x%02x, sent 0x%02x\n", i,
					buf[i], pattern_byte(i));
				goto out;
			}
		/* The sender's completion needs our ACK: stay until it has it. */
		err = expect_line("done");
	}
	if (err) {
		failed("out-of-band done", err);
		goto out;
	}
	fprintf(stderr, "consumer: %s %d bytes on QP 0x%x\n", sender ? "sent" : "received", MSG_LEN,
		qp->qp_num);
	status = 0;
out:
	if (qp && (err = xr_destroy_qp(qp)))
		status = failed("xr_destroy_qp", err);
	if (cq && (err = xr_destroy_cq(cq)))
		status = failed("xr_destroy_cq", err);
	if (mr && (err = xr_dereg_mr(mr)))
		status = failed("xr_dereg_mr", err);
	if (pd && (err = xr_dealloc_pd(pd)))
		status = failed("xr_dealloc_pd", err);
	return status;
}

int main(int argc, char **argv)
{
	static uint8_t buf[MSG_LEN];
	struct xr_device *dev;
	int status, err;

	if (argc != 3 || (strcmp(argv[2], "send") && strcmp(argv[2], "recv"))) {
		fprintf(stderr, "usage: consumer IFNAME send|recv\n");
		return 2;
	}
	dev = xr_open_device(argv[1], NULL);
	if (!dev)
		return failed(argv[1], errno);
	status = run(dev, buf, !strcmp(argv[2], "send"));
	err = xr_close_device(dev);
	if (err)
		status = failed("xr_close_device", err);
	return status;
}
