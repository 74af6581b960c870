/* SPDX-License-Identifier: MIT */
/*
 * rxe_mw_peer: the Soft-RoCE side of tests/interop/mw.sh. A libibverbs
 * program for the rxe-peer guest (built on the host by mw.sh, not by the
 * Makefile; it runs in the guest as /share/rxe_mw_peer). It is a small verbs
 * agent: xroce_mw_peer, which holds the test cases, connects to it and asks
 * for one verb at a time, and this program answers with what happened.
 *
 *   rxe_mw_peer [-d DEVICE] [-x GID_INDEX] [-p PORT] [-t SECONDS]
 *
 * Listens on TCP PORT (default 18610), accepts one connection within 60 s,
 * then serves commands until BYE, end of file or SECONDS (default 150) have
 * passed. Exit status 0 when the session ended with BYE, 1 otherwise.
 *
 * Out-of-band protocol (one '\n'-terminated ASCII line each way, numbers in hex):
 *   client: "XRMW1 NQP GID32HEX BASE QPN PSN QPN PSN"
 *   server: "XRMW1 NQP GID32HEX BASE QPN PSN QPN PSN"   (then both go to RTS)
 *   client: "RTS"   server: "RTS"
 * then per command the client sends one line and the server answers one line,
 * "OK ..." or "ERR why". BASE is the address of the 64 KiB buffer that every
 * offset below is relative to; it is registered with LOCAL_WRITE and MW_BIND
 * only, so the peer reaches it through memory windows or not at all.
 *   FILL OFF LEN SEED                -> OK
 *   CHECK OFF LEN SEED               -> OK 1 | OK 0 DIFF_OFF GOT WANT
 *   MW TYPE                          -> OK IDX RKEY            ibv_alloc_mw
 *   BIND1 QP IDX OFF LEN ACCESS      -> OK STATUS OPCODE RKEY  ibv_bind_mw (LEN 0 unbinds)
 *   BIND2 QP IDX OFF LEN ACCESS      -> OK STATUS OPCODE RKEY  IBV_WR_BIND_MW, ibv_inc_rkey
 *   LINV QP RKEY                     -> OK STATUS OPCODE       IBV_WR_LOCAL_INV
 *   WRITE QP RKEY RADDR LEN OFF SEED -> OK STATUS OPCODE       fills OFF.. with SEED first
 *   READ QP RKEY RADDR LEN OFF       -> OK STATUS OPCODE
 *   SINV QP RKEY LEN OFF SEED        -> OK STATUS OPCODE       IBV_WR_SEND_WITH_INV
 *   RECV QP OFF LEN                  -> OK
 *   PRECV QP                         -> OK STATUS OPCODE BYTE_LEN WC_FLAGS INV_RKEY
 *   STATE QP WANT                    -> OK STATE               waits up to 5 s for WANT
 *   BYE                              -> OK
 * STATUS is the ibv_wc_status of the completion, or -1 when none came in
 * 20 s. PRECV's INV_RKEY is ibv_wc.invalidated_rkey whatever the flags say.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NQP 2
#define MEM_SIZE 65536
#define MAX_MW 8
#define MAX_COMMANDS 1000
#define ACCEPT_TIMEOUT_MS 60000
#define LINE_TIMEOUT_MS 60000
#define COMPLETION_TIMEOUT_MS 20000
#define STATE_TIMEOUT_MS 5000
/* Spin this many empty polls, then sleep between polls: rxe runs on the same vCPU. */
#define SPIN_POLLS 64
#define POLL_SLEEP_NS 100000
#define LINE_MAX_LEN 512

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *mem;
static struct ibv_cq *scq[NQP], *rcq[NQP];
static struct ibv_qp *qp[NQP];
static struct ibv_mw *mws[MAX_MW];
static int nmw;
static int gid_index = 1;
static int sock_fd = -1;
static int64_t session_deadline;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "rxe_mw_peer: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The same pattern as xroce_mw_peer's: byte i of a region filled with seed. */
static uint8_t pattern(unsigned int seed, uint32_t i)
{
	return (uint8_t)(seed * 0x9du + i * 7u + (i >> 8) * 3u + 1u);
}

static bool in_mem(uint64_t off, uint64_t len)
{
	return off <= MEM_SIZE && len <= MEM_SIZE - off;
}

/* ---- the out-of-band line channel ------------------------------------------ */

static bool read_line(char *line, size_t size, int64_t deadline)
{
	size_t used = 0;

	while (used + 1 < size) {
		struct pollfd pfd = {.fd = sock_fd, .events = POLLIN};
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			return false;
		n = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (n < 0 && errno != EINTR)
			return false;
		if (n <= 0)
			continue;
		n = read(sock_fd, &line[used], 1);
		if (n <= 0)
			return false;
		if (line[used] == '\n') {
			line[used] = '\0';
			return true;
		}
		used++;
	}
	return false;
}

static void reply(const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	va_list ap;
	size_t len, done = 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		n = snprintf(line, sizeof(line) - 1, "ERR reply too long");
	printf("  -> %s\n", line);
	fflush(stdout);
	len = (size_t)n;
	line[len++] = '\n';
	while (done < len) {
		ssize_t w = send(sock_fd, line + done, len - done, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("send");
		done += (size_t)w;
	}
}

static int listen_and_accept(unsigned int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct pollfd pfd;
	int one = 1, fd, c;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1))
		die("listen");
	printf("listening on port %u\n", port);
	fflush(stdout);
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, ACCEPT_TIMEOUT_MS) != 1) {
		fprintf(stderr, "rxe_mw_peer: nobody connected in %d s\n",
			ACCEPT_TIMEOUT_MS / 1000);
		exit(1);
	}
	c = accept(fd, NULL, NULL);
	if (c < 0)
		die("accept");
	close(fd);
	return c;
}

/* ---- verbs ----------------------------------------------------------------- */

/* The device named, or the first one. */
static void setup(const char *name)
{
	struct ibv_device **list;
	int n, i = 0;

	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		die("no RDMA device");
	while (name && i < n && strcmp(ibv_get_device_name(list[i]), name) != 0)
		i++;
	if (i == n) {
		fprintf(stderr, "rxe_mw_peer: no RDMA device named %s\n", name);
		exit(1);
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	printf("device %s\n", ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	mem = aligned_alloc(4096, MEM_SIZE);
	if (!mem)
		die("aligned_alloc");
	memset(mem, 0, MEM_SIZE);
	/* No remote rights: the peer gets at this memory through windows only. */
	mr = ibv_reg_mr(pd, mem, MEM_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!mr)
		die("ibv_reg_mr");
	for (int i = 0; i < NQP; i++) {
		struct ibv_qp_init_attr ia = {
		    .qp_type = IBV_QPT_RC,
		    .cap = {.max_send_wr = 16,
			    .max_recv_wr = 16,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		};
		struct ibv_qp_attr a = {
		    .qp_state = IBV_QPS_INIT,
		    .port_num = 1,
		    .qp_access_flags =
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		};

		scq[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		rcq[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		if (!scq[i] || !rcq[i])
			die("ibv_create_cq");
		ia.send_cq = scq[i];
		ia.recv_cq = rcq[i];
		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			die("ibv_create_qp");
		if (ibv_modify_qp(qp[i], &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
			die("modify to INIT");
	}
}

static void connect_qp(int i, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn,
		       const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = IBV_MTU_1024,
	    .dest_qp_num = dest_qpn,
	    .rq_psn = rq_psn,
	    .max_dest_rd_atomic = 4,
	    .min_rnr_timer = 12,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = *dgid, .sgid_index = (uint8_t)gid_index, .hop_limit = 64}},
	};

	if (ibv_modify_qp(qp[i], &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp[i], &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

/* One completion from cq within the timeout: 1, 0 when none came, -1 on a polling error. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int64_t deadline = now_ms() + COMPLETION_TIMEOUT_MS;

	for (unsigned int polls = 0;; polls++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n != 0)
			return n < 0 ? -1 : 1;
		if (now_ms() >= deadline)
			return 0;
		if (polls >= SPIN_POLLS)
			nanosleep(&(struct timespec){.tv_nsec = POLL_SLEEP_NS}, NULL);
	}
}

/* Posts wr on QP i (signaled) and answers with its completion's status and opcode. */
static void post_and_reply(int i, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int ret, got;

	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp[i], wr, &bad);
	if (ret) {
		reply("ERR ibv_post_send: %s", strerror(ret));
		return;
	}
	got = poll_one(scq[i], &wc);
	if (got < 0)
		reply("ERR ibv_poll_cq failed");
	else if (got == 0)
		reply("OK -1 -1");
	else
		reply("OK %d %d", wc.status, wc.opcode);
}

static struct ibv_sge local_sge(uint32_t off, uint32_t len)
{
	return (struct ibv_sge){.addr = (uintptr_t)mem + off, .length = len, .lkey = mr->lkey};
}

/* ---- commands -------------------------------------------------------------- */

static bool valid_qp(unsigned int i)
{
	if (i < NQP)
		return true;
	reply("ERR no QP %u", i);
	return false;
}

static bool valid_mw(unsigned int i)
{
	if (i < (unsigned int)nmw)
		return true;
	reply("ERR no memory window %u", i);
	return false;
}

static bool valid_range(uint64_t off, uint64_t len)
{
	if (in_mem(off, len))
		return true;
	reply("ERR range 0x%" PRIx64 "+0x%" PRIx64 " is outside the buffer", off, len);
	return false;
}

static void cmd_check(uint32_t off, uint32_t len, unsigned int seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (mem[off + i] != pattern(seed, i)) {
			reply("OK 0 %x %02x %02x", off + i, mem[off + i], pattern(seed, i));
			return;
		}
	reply("OK 1");
}

static void cmd_bind1(unsigned int q, unsigned int m, uint32_t off, uint32_t len,
		      unsigned int access)
{
	struct ibv_mw *mw = mws[m];
	struct ibv_mw_bind b = {
	    .wr_id = 0xb1,
	    .send_flags = IBV_SEND_SIGNALED,
	    .bind_info = {.mr = mr,
			  .addr = len ? (uintptr_t)mem + off : 0,
			  .length = len,
			  .mw_access_flags = access},
	};
	uint32_t before = mw->rkey;
	struct ibv_wc wc;
	int ret, got;

	ret = ibv_bind_mw(qp[q], mw, &b);
	if (ret) {
		reply("ERR ibv_bind_mw: %s", strerror(ret));
		return;
	}
	printf("  ibv_bind_mw: rkey 0x%08x -> 0x%08x\n", before, mw->rkey);
	got = poll_one(scq[q], &wc);
	if (got <= 0)
		reply("OK -1 -1 %x", mw->rkey);
	else
		reply("OK %d %d %x", wc.status, wc.opcode, mw->rkey);
}

static void cmd_bind2(unsigned int q, unsigned int m, uint32_t off, uint32_t len,
		      unsigned int access)
{
	struct ibv_mw *mw = mws[m];
	uint32_t new_rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr = {
	    .wr_id = 0xb2,
	    .opcode = IBV_WR_BIND_MW,
	    .send_flags = IBV_SEND_SIGNALED,
	    .bind_mw = {.mw = mw,
			.rkey = new_rkey,
			.bind_info = {.mr = mr,
				      .addr = (uintptr_t)mem + off,
				      .length = len,
				      .mw_access_flags = access}},
	};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int ret, got;

	ret = ibv_post_send(qp[q], &wr, &bad);
	if (ret) {
		reply("ERR ibv_post_send(BIND_MW): %s", strerror(ret));
		return;
	}
	got = poll_one(scq[q], &wc);
	if (got <= 0) {
		reply("OK -1 -1 %x", mw->rkey);
		return;
	}
	/*
	 * The provider leaves ibv_mw.rkey as it was after a type 2 bind: the
	 * new key is the application's to remember (libibverbs' rule), and the
	 * next bind names the window by it.
	 */
	printf("  type 2 bind: ibv_mw.rkey after the bind 0x%08x, new key 0x%08x\n", mw->rkey,
	       new_rkey);
	if (wc.status == IBV_WC_SUCCESS)
		mw->rkey = new_rkey;
	reply("OK %d %d %x", wc.status, wc.opcode, new_rkey);
}

static void cmd_precv(unsigned int q)
{
	struct ibv_wc wc;
	int got = poll_one(rcq[q], &wc);

	if (got < 0)
		reply("ERR ibv_poll_cq failed");
	else if (got == 0)
		reply("OK -1 -1 0 0 0");
	else
		/*
		 * The flags as they come, and the invalidated key whatever the
		 * flags say: rxe writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2)
		 * into the completion, which libibverbs calls IBV_WC_IP_CSUM_OK,
		 * and leaves IBV_WC_WITH_INV (1 << 3) clear.
		 */
		reply("OK %d %d %x %x %x", wc.status, wc.opcode, wc.byte_len, wc.wc_flags,
		      wc.invalidated_rkey);
}

static void cmd_state(unsigned int q, int want)
{
	int64_t deadline = now_ms() + STATE_TIMEOUT_MS;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	for (;;) {
		if (ibv_query_qp(qp[q], &attr, IBV_QP_STATE, &init)) {
			reply("ERR ibv_query_qp failed");
			return;
		}
		if ((int)attr.qp_state == want || now_ms() >= deadline)
			break;
		usleep(10000);
	}
	reply("OK %d", attr.qp_state);
}

/* Returns false after BYE. */
static bool serve(char *line)
{
	unsigned int q, m, access, seed, type;
	uint32_t off, len, rkey;
	uint64_t raddr;
	int want;

	printf("%s\n", line);
	if (sscanf(line, "FILL %x %x %x", &off, &len, &seed) == 3) {
		if (valid_range(off, len)) {
			for (uint32_t i = 0; i < len; i++)
				mem[off + i] = pattern(seed, i);
			reply("OK");
		}
	} else if (sscanf(line, "CHECK %x %x %x", &off, &len, &seed) == 3) {
		if (valid_range(off, len))
			cmd_check(off, len, seed);
	} else if (sscanf(line, "MW %u", &type) == 1) {
		if (nmw == MAX_MW) {
			reply("ERR too many memory windows");
		} else {
			struct ibv_mw *mw =
			    ibv_alloc_mw(pd, type == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);

			if (!mw) {
				reply("ERR ibv_alloc_mw: %s", strerror(errno));
			} else {
				mws[nmw] = mw;
				reply("OK %x %x", nmw++, mw->rkey);
			}
		}
	} else if (sscanf(line, "BIND1 %u %u %x %x %x", &q, &m, &off, &len, &access) == 5) {
		if (valid_qp(q) && valid_mw(m) && valid_range(off, len))
			cmd_bind1(q, m, off, len, access);
	} else if (sscanf(line, "BIND2 %u %u %x %x %x", &q, &m, &off, &len, &access) == 5) {
		if (valid_qp(q) && valid_mw(m) && valid_range(off, len))
			cmd_bind2(q, m, off, len, access);
	} else if (sscanf(line, "LINV %u %x", &q, &rkey) == 2) {
		struct ibv_send_wr wr = {
		    .wr_id = 0x11, .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = rkey};

		if (valid_qp(q))
			post_and_reply((int)q, &wr);
	} else if (sscanf(line, "WRITE %u %x %" SCNx64 " %x %x %x", &q, &rkey, &raddr, &len, &off,
			  &seed) == 6) {
		if (valid_qp(q) && valid_range(off, len)) {
			struct ibv_sge sge = local_sge(off, len);
			struct ibv_send_wr wr = {.wr_id = 0x33,
						 .sg_list = &sge,
						 .num_sge = 1,
						 .opcode = IBV_WR_RDMA_WRITE,
						 .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};

			for (uint32_t i = 0; i < len; i++)
				mem[off + i] = pattern(seed, i);
			post_and_reply((int)q, &wr);
		}
	} else if (sscanf(line, "READ %u %x %" SCNx64 " %x %x", &q, &rkey, &raddr, &len, &off) ==
		   5) {
		if (valid_qp(q) && valid_range(off, len)) {
			struct ibv_sge sge = local_sge(off, len);
			struct ibv_send_wr wr = {.wr_id = 0x44,
						 .sg_list = &sge,
						 .num_sge = 1,
						 .opcode = IBV_WR_RDMA_READ,
						 .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};

			post_and_reply((int)q, &wr);
		}
	} else if (sscanf(line, "SINV %u %x %x %x %x", &q, &rkey, &len, &off, &seed) == 5) {
		if (valid_qp(q) && valid_range(off, len)) {
			struct ibv_sge sge = local_sge(off, len);
			struct ibv_send_wr wr = {.wr_id = 0x55,
						 .sg_list = &sge,
						 .num_sge = 1,
						 .opcode = IBV_WR_SEND_WITH_INV,
						 .invalidate_rkey = rkey};

			for (uint32_t i = 0; i < len; i++)
				mem[off + i] = pattern(seed, i);
			post_and_reply((int)q, &wr);
		}
	} else if (sscanf(line, "RECV %u %x %x", &q, &off, &len) == 3) {
		if (valid_qp(q) && valid_range(off, len)) {
			struct ibv_sge sge = local_sge(off, len);
			struct ibv_recv_wr wr = {.wr_id = 0x66, .sg_list = &sge, .num_sge = 1};
			struct ibv_recv_wr *bad;
			int ret = ibv_post_recv(qp[q], &wr, &bad);

			if (ret)
				reply("ERR ibv_post_recv: %s", strerror(ret));
			else
				reply("OK");
		}
	} else if (sscanf(line, "PRECV %u", &q) == 1) {
		if (valid_qp(q))
			cmd_precv(q);
	} else if (sscanf(line, "STATE %u %d", &q, &want) == 2) {
		if (valid_qp(q))
			cmd_state(q, want);
	} else if (strcmp(line, "BYE") == 0) {
		reply("OK");
		return false;
	} else {
		reply("ERR unknown command");
	}
	return true;
}

/* ---- connection ------------------------------------------------------------ */

static void gid_to_hex(const union ibv_gid *gid, char *hex)
{
	for (int i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", gid->raw[i]);
}

static bool hex_to_gid(const char *hex, union ibv_gid *gid)
{
	if (strlen(hex) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		gid->raw[i] = (uint8_t)v;
	}
	return true;
}

static void exchange_and_connect(void)
{
	char line[LINE_MAX_LEN], hex[40], peer_hex[40];
	unsigned int nqp, qpn[NQP], psn[NQP], my_psn[NQP];
	union ibv_gid gid, peer_gid;
	uint64_t peer_base;
	int64_t deadline = now_ms() + LINE_TIMEOUT_MS;

	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		die("ibv_query_gid");
	gid_to_hex(&gid, hex);
	if (!read_line(line, sizeof(line), deadline)) {
		fprintf(stderr, "rxe_mw_peer: no hello from the peer\n");
		exit(1);
	}
	printf("peer: %s\n", line);
	if (sscanf(line, "XRMW1 %x %39s %" SCNx64 " %x %x %x %x", &nqp, peer_hex, &peer_base,
		   &qpn[0], &psn[0], &qpn[1], &psn[1]) != 7 ||
	    nqp != NQP || !hex_to_gid(peer_hex, &peer_gid)) {
		fprintf(stderr, "rxe_mw_peer: malformed hello: %s\n", line);
		exit(1);
	}
	srand48((long)time(NULL) ^ getpid());
	for (int i = 0; i < NQP; i++) {
		my_psn[i] = (unsigned int)lrand48() & 0xffffff;
		connect_qp(i, qpn[i], psn[i], my_psn[i], &peer_gid);
	}
	reply("XRMW1 %x %s %" PRIx64 " %x %x %x %x", NQP, hex, (uint64_t)(uintptr_t)mem,
	      qp[0]->qp_num, my_psn[0], qp[1]->qp_num, my_psn[1]);
	if (!read_line(line, sizeof(line), deadline) || strcmp(line, "RTS") != 0) {
		fprintf(stderr, "rxe_mw_peer: the peer did not reach RTS\n");
		exit(1);
	}
	reply("RTS");
}

int main(int argc, char **argv)
{
	unsigned int port = 18610, seconds = 150;
	const char *device = NULL;
	char line[LINE_MAX_LEN];
	bool bye = false;
	int c;

	while ((c = getopt(argc, argv, "d:x:p:t:")) != -1) {
		switch (c) {
		case 'd':
			device = optarg;
			break;
		case 'x':
			gid_index = atoi(optarg);
			break;
		case 'p':
			port = (unsigned int)atoi(optarg);
			break;
		case 't':
			seconds = (unsigned int)atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-d DEVICE] [-x GID_INDEX] [-p PORT] [-t SECONDS]\n",
				argv[0]);
			return 1;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	session_deadline = now_ms() + (int64_t)seconds * 1000;
	setup(device);
	sock_fd = listen_and_accept(port);
	exchange_and_connect();
	for (int n = 0; n < MAX_COMMANDS && now_ms() < session_deadline; n++) {
		int64_t deadline = now_ms() + LINE_TIMEOUT_MS;

		if (deadline > session_deadline)
			deadline = session_deadline;
		if (!read_line(line, sizeof(line), deadline))
			break;
		if (!serve(line)) {
			bye = true;
			break;
		}
	}
	printf(bye ? "session ended with BYE\n" : "session ended without BYE\n");
	return bye ? 0 : 1;
}
