/* SPDX-License-Identifier: MIT */
/*
 * One member of the multicast end-to-end test (test_mcast_e2e.sh): a process
 * with UD QPs on one interface, driven line by line from stdin so that the
 * script can order what several processes in several namespaces do.
 *
 *   mcast_e2e receiver IFNAME GID_INDEX GROUP NQPS
 *   mcast_e2e sender   IFNAME GID_INDEX GROUP
 *
 * GROUP is an IPv4 (239.1.2.3) or IPv6 (ff12::1:2:3) group address. A
 * receiver's QPs keep receives posted and check every completion: status,
 * byte_len 40 + size, the GRH naming the group as its destination and the
 * sender's GID as its source, src_qp the sender's QP, and the payload (the
 * message number in its first 4 bytes, then that message's pattern). Each
 * QP records which messages it got: a second copy is a duplicate.
 *
 * Commands (each answered with one line, "ok ..." or "error ..."):
 *   attach Q | detach Q     xr_attach_mcast / xr_detach_mcast for QP Q
 *   destroy Q               xr_destroy_qp, answered "ok destroy Q errno E"
 *   wait Q N MS             until QP Q has N messages or MS ms passed; then
 *                           "ok counts C0 C1 ... dups D bad B"
 *   sender SQPN SGID        the sender to expect (as its "qp" line says)
 *   send FIRST N SIZE       (sender) messages FIRST.. to the group, each
 *                           completed, "ok sent N"
 *   quit
 * At start each prints "qp QPN GID" for itself (a sender) or "ready".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e_common.h"

#define QKEY 0x11111111u
#define MAX_QPS 4
#define RECVS 64
#define MAX_MSG 1024
#define MAX_SEQ 4096
#define SLOT (XR_GRH_SIZE + MAX_MSG)

struct member {
	struct xr_cq *cq;
	struct xr_qp *qp;
	uint8_t *buf; /* RECVS slots */
	struct xr_mr *mr;
	uint8_t seen[MAX_SEQ];
	int count, dups;
};

static struct e2e_port port;
static union xr_gid group, sender_gid;
static uint32_t sender_qpn;
static struct member members[MAX_QPS];
static int nmembers, bad;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_gid(const char *text, union xr_gid *gid)
{
	struct in_addr a4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, text, &a4) == 1) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &a4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, text, gid->raw) == 1 ? 0 : -1;
}

static bool is_v4mapped(const union xr_gid *gid)
{
	static const uint8_t prefix[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

static struct xr_qp *ud_qp(struct xr_cq *cq)
{
	struct xr_qp_init_attr init = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = RECVS,
		    .max_recv_wr = RECVS,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	    .qp_type = XR_QPT_UD,
	    .sq_sig_all = 1,
	};
	struct xr_qp_attr a = {.qp_state = XR_QPS_INIT, .port_num = 1, .qkey = QKEY};
	struct xr_qp *qp = xr_create_qp(port.pd, &init);

	if (!qp)
		return NULL;
	if (xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY))
		return NULL;
	a.qp_state = XR_QPS_RTR;
	if (xr_modify_qp(qp, &a, XR_QP_STATE))
		return NULL;
	a.qp_state = XR_QPS_RTS;
	a.sq_psn = (uint32_t)lrand48() & 0xffffff;
	return xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_SQ_PSN) ? NULL : qp;
}

static int post_slot(struct member *m, int slot)
{
	struct xr_sge sge = sge_of(m->mr, m->buf + (size_t)slot * SLOT, SLOT);
	struct xr_recv_wr wr = {.wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad_wr;

	return xr_post_recv(m->qp, &wr, &bad_wr);
}

static int setup_member(struct member *m, bool receives)
{
	m->cq = xr_create_cq(port.dev, 2 * RECVS, NULL);
	m->qp = m->cq ? ud_qp(m->cq) : NULL;
	m->buf = calloc(RECVS, SLOT);
	if (!m->qp || !m->buf)
		return -1;
	m->mr = xr_reg_mr(port.pd, m->buf, (size_t)RECVS * SLOT, XR_ACCESS_LOCAL_WRITE);
	if (!m->mr)
		return -1;
	for (int s = 0; receives && s < RECVS; s++)
		if (post_slot(m, s))
			return -1;
	return 0;
}

/* Checks one received message; what is wrong goes to stderr and counts as bad. */
static void check_message(struct member *m, int q, const struct xr_wc *wc)
{
	const uint8_t *slot = m->buf + wc->wr_id * SLOT, *payload = slot + XR_GRH_SIZE;
	uint32_t len = wc->byte_len - XR_GRH_SIZE, seq;
	union xr_gid src, dst;
	uint8_t want[MAX_MSG];

	if (wc->status != XR_WC_SUCCESS || !(wc->wc_flags & XR_WC_GRH) ||
	    wc->byte_len < XR_GRH_SIZE + 4 || wc->src_qp != sender_qpn) {
		fprintf(stderr, "QP %d: completion status %d flags %#x byte_len %u src_qp %#x\n", q,
			wc->status, wc->wc_flags, wc->byte_len, wc->src_qp);
		bad++;
		return;
	}
	if (is_v4mapped(&group)) {
		memset(&src, 0, sizeof(src));
		dst = src;
		src.raw[10] = src.raw[11] = dst.raw[10] = dst.raw[11] = 0xff;
		memcpy(&src.raw[12], slot + 20 + 12, 4);
		memcpy(&dst.raw[12], slot + 20 + 16, 4);
	} else {
		memcpy(src.raw, slot + 8, 16);
		memcpy(dst.raw, slot + 24, 16);
	}
	if (memcmp(&dst, &group, sizeof(dst)) || memcmp(&src, &sender_gid, sizeof(src))) {
		fprintf(stderr, "QP %d: the GRH's addresses are not the sender's and the group's\n",
			q);
		bad++;
		return;
	}
	memcpy(&seq, payload, 4);
	seq = ntohl(seq);
	fill_pattern(want, seq, 4, len - 4);
	if (seq >= MAX_SEQ || memcmp(payload + 4, want, len - 4)) {
		fprintf(stderr, "QP %d: message %u: payload differs\n", q, seq);
		bad++;
		return;
	}
	if (m->seen[seq]++)
		m->dups++;
	else
		m->count++;
}

static void poll_members(void)
{
	for (int q = 0; q < nmembers; q++) {
		struct member *m = &members[q];
		struct xr_wc wc;

		while (xr_poll_cq(m->cq, 1, &wc) == 1) {
			check_message(m, q, &wc);
			if (post_slot(m, (int)wc.wr_id)) {
				fprintf(stderr, "QP %d: repost failed\n", q);
				bad++;
			}
		}
	}
}

static void cmd_wait(int q, int n, int ms)
{
	int64_t deadline = now_ms() + ms;
	int dups = 0;

	do {
		poll_members();
		if (q >= 0 && q < nmembers && members[q].count >= n)
			break;
	} while (now_ms() < deadline);
	printf("ok counts");
	for (int i = 0; i < nmembers; i++) {
		printf(" %d", members[i].count);
		dups += members[i].dups;
	}
	printf(" dups %d bad %d\n", dups, bad);
}

static int cmd_send(struct xr_ah *ah, uint32_t first, uint32_t n, uint32_t size)
{
	struct member *m = &members[0];

	if (size < 4 || size > MAX_MSG || n > RECVS)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *msg = m->buf + (size_t)i * SLOT;
		uint32_t seq = htonl(first + i);
		struct xr_sge sge = sge_of(m->mr, msg, size);
		struct xr_send_wr wr = {
		    .wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = XR_WR_SEND};
		struct xr_send_wr *bad_wr;
		int err;

		memcpy(msg, &seq, 4);
		fill_pattern(msg + 4, first + i, 4, size - 4);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = XR_MULTICAST_QPN;
		wr.wr.ud.remote_qkey = QKEY;
		err = xr_post_send(m->qp, &wr, &bad_wr);
		if (err)
			return err;
	}
	for (uint32_t done = 0; done < n;) {
		int64_t deadline = now_ms() + 5000;
		struct xr_wc wc;
		int got;

		while ((got = xr_poll_cq(m->cq, 1, &wc)) == 0 && now_ms() < deadline)
			;
		if (got != 1 || wc.status != XR_WC_SUCCESS)
			return -EIO;
		done++;
	}
	return 0;
}

static void answer(const char *what, unsigned int q, int err)
{
	if (err)
		printf("error %s %u: %s\n", what, q, strerrorname_np(err));
	else
		printf("ok %s %u\n", what, q);
}

static int run(bool sender, int nqps, int gid_index, const char *ifname)
{
	struct xr_ah *ah = NULL;
	char line[256];

	if (e2e_open_port("mcast_e2e", ifname, gid_index, &port))
		return 1;
	nmembers = nqps;
	for (int q = 0; q < nqps; q++)
		if (setup_member(&members[q], !sender)) {
			fprintf(stderr, "mcast_e2e: QP %d: %s\n", q, strerror(errno));
			return 1;
		}
	if (sender) {
		struct xr_ah_attr attr = {.is_global = 1, .port_num = 1};
		char text[INET6_ADDRSTRLEN];

		attr.grh.dgid = group;
		attr.grh.sgid_index = (uint8_t)port.gid_index;
		attr.grh.hop_limit = 255;
		ah = xr_create_ah(port.pd, &attr);
		if (!ah) {
			fprintf(stderr, "mcast_e2e: AH to the group: %s\n", strerror(errno));
			return 1;
		}
		inet_ntop(AF_INET6, port.gid.raw, text, sizeof(text));
		printf("qp %#x %s\n", members[0].qp->qp_num, text);
	} else {
		printf("ready\n");
	}
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		char gid_text[INET6_ADDRSTRLEN];
		unsigned int a, b, c;
		int err;

		if (sscanf(line, "attach %u", &a) == 1 && (int)a < nmembers) {
			err = xr_attach_mcast(members[a].qp, &group, 0) ? errno : 0;
			answer("attach", a, err);
		} else if (sscanf(line, "detach %u", &a) == 1 && (int)a < nmembers) {
			err = xr_detach_mcast(members[a].qp, &group, 0) ? errno : 0;
			answer("detach", a, err);
		} else if (sscanf(line, "destroy %u", &a) == 1 && (int)a < nmembers) {
			err = xr_destroy_qp(members[a].qp) ? errno : 0;
			if (!err)
				members[a].qp = NULL;
			printf("ok destroy %u errno %s\n", a, err ? strerrorname_np(err) : "0");
		} else if (sscanf(line, "wait %u %u %u", &a, &b, &c) == 3) {
			cmd_wait((int)a, (int)b, (int)c);
		} else if (sscanf(line, "sender %x %45s", &a, gid_text) == 2 &&
			   !parse_gid(gid_text, &sender_gid)) {
			sender_qpn = a;
			printf("ok sender\n");
		} else if (sender && sscanf(line, "send %u %u %u", &a, &b, &c) == 3) {
			err = cmd_send(ah, a, b, c);
			if (err)
				printf("error send: %s\n", strerror(-err));
			else
				printf("ok sent %u\n", b);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("error unknown command: %s", line);
		}
		fflush(stdout);
	}
	if (ah)
		xr_destroy_ah(ah);
	for (int q = 0; q < nmembers; q++) {
		if (members[q].qp)
			xr_destroy_qp(members[q].qp);
		xr_dereg_mr(members[q].mr);
		xr_destroy_cq(members[q].cq);
		free(members[q].buf);
	}
	e2e_close_port(&port);
	return 0;
}

int main(int argc, char **argv)
{
	bool sender = argc == 5 && !strcmp(argv[1], "sender");
	int nqps = sender ? 1 : argc == 6 ? atoi(argv[5]) : 0;

	if ((!sender && (argc != 6 || strcmp(argv[1], "receiver"))) || nqps < 1 || nqps > MAX_QPS ||
	    parse_gid(argv[4], &group)) {
		fprintf(stderr, "usage: mcast_e2e receiver IFNAME GID_INDEX GROUP NQPS\n"
				"       mcast_e2e sender IFNAME GID_INDEX GROUP\n");
		return 2;
	}
	srand48(getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	return run(sender, nqps, atoi(argv[3]), argv[2]);
}
