/* SPDX-License-Identifier: MIT */
/*
 * zero_alloc_e2e: the data path allocates nothing. Between two processes,
 * through the XDP program and AF_XDP, the client runs 10,000 operations
 * (SEND, WRITE, READ, fetch-and-add, compare-and-swap, in rounds of one of
 * each) while the server reposts receives and polls; both count every heap
 * allocation and release of the whole process (engine thread included)
 * from the moment the QPs are connected until the last completion, and
 * fail unless there was none. Every operation's data is checked too, so a
 * data path that did nothing could not pass.
 *
 *   zero_alloc_e2e server IFNAME [-p PORT]
 *   zero_alloc_e2e client IFNAME SERVER_IP [-p PORT]
 *
 * The counting hook interposes malloc and friends from this executable
 * (the dynamic linker resolves every library's calls to it); under
 * AddressSanitizer, which owns malloc, it uses the sanitizer's hooks.
 */
#include <malloc.h>
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "zero_alloc_e2e"
#define DEFAULT_PORT 18795
#define ROUNDS 2000 /* of 5 operations: 10,000 */
#define OPS_PER_ROUND 5
#define SEND_SIZE 64
#define SLOT_SIZE 4096
#define SLOTS 16
#define RECV_DEPTH 64
#define ROUND_TIMEOUT_MS 10000
#define RUN_TIMEOUT_MS 120000

/* ---- the allocation counter ------------------------------------------------ */

static int counting;
static uint64_t allocs, frees;

static void count(uint64_t *what)
{
	if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
		__atomic_add_fetch(what, 1, __ATOMIC_RELAXED);
}

#if defined(__SANITIZE_ADDRESS__)
/*
 * The ASan runtime's hook (<sanitizer/allocator_interface.h>, which clang
 * ships and gcc does not).
 */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
					      void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t size)
{
	(void)p;
	(void)size;
	count(&allocs);
}

static void on_free(const volatile void *p)
{
	(void)p;
	count(&frees);
}

static void install_hook(void)
{
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

void *malloc(size_t size)
{
	count(&allocs);
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	count(&allocs);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	count(&allocs);
	return __libc_realloc(p, size);
}

void *memalign(size_t align, size_t size)
{
	count(&allocs);
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	count(&allocs);
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	count(&allocs);
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void free(void *p)
{
	if (p)
		count(&frees);
	__libc_free(p);
}

static void install_hook(void)
{
}
#endif

static void start_counting(void)
{
	__atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
}

static void stop_counting(void)
{
	__atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
}

/* ---- both sides -------------------------------------------------------------- */

struct side {
	struct e2e_port port;
	struct e2e_qp_end end;
	uint8_t *buf; /* server: receive slots, WRITE/READ slots, atomic word */
	struct xr_mr *mr;
	uint32_t peer_rkey;
	uint64_t peer_addr;
};

/* Layout of both buffers: receives (or sends), slots, then the atomic word (or results). */
#define RECV_AREA 0
#define SLOT_AREA (RECV_DEPTH * SEND_SIZE)
#define ATOMIC_AREA (SLOT_AREA + SLOTS * SLOT_SIZE)
#define BUF_SIZE (ATOMIC_AREA + 64)

static int setup(struct side *s, const char *ifname)
{
	const int access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
			   XR_ACCESS_REMOTE_ATOMIC;

	if (e2e_open_port(PROG, ifname, -1, &s->port))
		return -1;
	s->buf = aligned_alloc(4096, (BUF_SIZE + 4095) & ~4095u);
	if (!s->buf)
		return -1;
	memset(s->buf, 0, BUF_SIZE);
	s->mr = xr_reg_mr(s->port.pd, s->buf, BUF_SIZE, access);
	if (!s->mr) {
		fprintf(stderr, "%s: couldn't register memory: %s\n", PROG, strerror(errno));
		return -1;
	}
	return e2e_create_qp_end(PROG, &s->port, &s->end, 2 * OPS_PER_ROUND, RECV_DEPTH, 1, access);
}

/* Hello: QPN, PSN, MTU, rkey, buffer address; connects to what the peer sent. */
static int exchange(struct side *s, int fd, bool is_server)
{
	uint32_t words[6] = {s->end.qp->qp_num,
			     s->end.psn,
			     s->port.mtu_enum,
			     s->mr->rkey,
			     (uint32_t)((uintptr_t)s->buf >> 32),
			     (uint32_t)(uintptr_t)s->buf};
	uint32_t peer[6];
	union xr_gid gid;
	int ret = 0;

	if (!is_server)
		ret = e2e_send_hello(fd, "ZEROALLC", words, 6, &s->port.gid);
	if (!ret)
		ret = e2e_recv_hello(fd, "ZEROALLC", peer, 6, &gid);
	if (ret) {
		fprintf(stderr, "%s: hello exchange failed: %s\n", PROG, oob_error(ret));
		return -1;
	}
	if (e2e_agree_mtu(PROG, &s->port, peer[2]) ||
	    e2e_connect_qp(PROG, &s->port, &s->end, 1, peer[0], peer[1], &gid))
		return -1;
	s->peer_rkey = peer[3];
	s->peer_addr = ((uint64_t)peer[4] << 32) | peer[5];
	if (is_server && e2e_send_hello(fd, "ZEROALLC", words, 6, &s->port.gid)) {
		fprintf(stderr, "%s: couldn't send our hello\n", PROG);
		return -1;
	}
	return 0;
}

static int post_recv(struct side *s, uint32_t slot)
{
	struct xr_sge sge = sge_of(s->mr, s->buf + RECV_AREA + slot * SEND_SIZE, SEND_SIZE);
	struct xr_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return xr_post_recv(s->end.qp, &wr, &bad);
}

/* Waits for one completion on cq; false after saying why. */
static bool poll_one(struct xr_cq *cq, struct xr_wc *wc, int64_t deadline, const char *what)
{
	while (tool_now_ms() < deadline) {
		int n = xr_poll_cq(cq, 1, wc);

		if (n == 1)
			return true;
		if (n < 0)
			break;
	}
	stop_counting();
	fprintf(stderr, "%s: no %s completion\n", PROG, what);
	return false;
}

/* The server: every SEND lands with the client's pattern; receives are reposted. */
static int serve(struct side *s, int fd)
{
	int64_t deadline = tool_now_ms() + RUN_TIMEOUT_MS;
	uint8_t go;
	struct xr_wc wc;

	for (uint32_t i = 0; i < RECV_DEPTH; i++)
		if (post_recv(s, i))
			return -1;
	start_counting();
	if (oob_write_full(fd, "G", 1, deadline))
		return -1;
	for (uint32_t n = 0; n < ROUNDS; n++) {
		uint8_t *msg;

		if (!poll_one(s->end.recv_cq, &wc, deadline, "receive"))
			return -1;
		msg = s->buf + RECV_AREA + wc.wr_id * SEND_SIZE;
		if (wc.status != XR_WC_SUCCESS || wc.byte_len != SEND_SIZE ||
		    pattern_mismatch(msg, n, 0, SEND_SIZE) >= 0) {
			stop_counting();
			fprintf(stderr, "%s: SEND %u: status %s, %u bytes, data %s\n", PROG, n,
				xr_wc_status_str(wc.status), wc.byte_len,
				pattern_mismatch(msg, n, 0, SEND_SIZE) >= 0 ? "wrong" : "right");
			return -1;
		}
		if (post_recv(s, (uint32_t)wc.wr_id))
			return -1;
	}
	/* The client says when its last operation completed. */
	if (oob_read_full(fd, &go, 1, deadline))
		return -1;
	stop_counting();
	if (load64(s->buf + ATOMIC_AREA) != 2u * ROUNDS) {
		fprintf(stderr, "%s: atomic word is %" PRIu64 ", want %u\n", PROG,
			load64(s->buf + ATOMIC_AREA), 2 * ROUNDS);
		return -1;
	}
	return 0;
}

static bool post(struct side *s, enum xr_wr_opcode op, uint64_t wr_id, uint8_t *local, uint32_t len,
		 uint64_t remote, uint64_t add_or_compare, uint64_t swap)
{
	struct xr_sge sge = sge_of(s->mr, local, len);
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = op,
				.send_flags = XR_SEND_SIGNALED},
			  *bad;

	if (op == XR_WR_ATOMIC_FETCH_AND_ADD || op == XR_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = remote;
		wr.wr.atomic.rkey = s->peer_rkey;
		wr.wr.atomic.compare_add = add_or_compare;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = s->peer_rkey;
	}
	return xr_post_send(s->end.qp, &wr, &bad) == 0;
}

/*
 * Round n: SEND n's pattern; WRITE pattern n into a slot and READ it back;
 * fetch-and-add 1, then compare-and-swap the value it must now hold to one
 * more. The word counts 2 per round, and each atomic returns what it held.
 */
static int drive(struct side *s, int fd)
{
	int64_t run_deadline = tool_now_ms() + RUN_TIMEOUT_MS;
	uint8_t go;

	if (oob_read_full(fd, &go, 1, run_deadline))
		return -1;
	start_counting();
	for (uint32_t n = 0; n < ROUNDS; n++) {
		int64_t deadline = tool_now_ms() + ROUND_TIMEOUT_MS;
		uint32_t slot = n % SLOTS;
		uint8_t *send = s->buf + RECV_AREA, *wslot = s->buf + SLOT_AREA + slot * SLOT_SIZE;
		uint8_t *rslot = s->buf + SLOT_AREA + ((slot + SLOTS / 2) % SLOTS) * SLOT_SIZE;
		uint8_t *faa = s->buf + ATOMIC_AREA, *cas = faa + 8;
		uint64_t remote_slot = s->peer_addr + SLOT_AREA + slot * SLOT_SIZE;
		uint64_t word = s->peer_addr + ATOMIC_AREA;
		struct xr_wc wc;
		bool ok;

		fill_pattern(send, n, 0, SEND_SIZE);
		fill_pattern(wslot, n + 1, 0, SLOT_SIZE);
		memset(rslot, 0, SLOT_SIZE);
		ok = post(s, XR_WR_SEND, 0, send, SEND_SIZE, 0, 0, 0) &&
		     post(s, XR_WR_RDMA_WRITE, 1, wslot, SLOT_SIZE, remote_slot, 0, 0) &&
		     post(s, XR_WR_RDMA_READ, 2, rslot, SLOT_SIZE, remote_slot, 0, 0) &&
		     post(s, XR_WR_ATOMIC_FETCH_AND_ADD, 3, faa, 8, word, 1, 0) &&
		     post(s, XR_WR_ATOMIC_CMP_AND_SWP, 4, cas, 8, word, 2u * n + 1, 2u * n + 2);
		if (!ok) {
			stop_counting();
			fprintf(stderr, "%s: round %u: post failed\n", PROG, n);
			return -1;
		}
		for (uint64_t id = 0; id < OPS_PER_ROUND; id++) {
			if (!poll_one(s->end.send_cq, &wc, deadline, "send"))
				return -1;
			if (wc.status != XR_WC_SUCCESS || wc.wr_id != id) {
				stop_counting();
				fprintf(stderr, "%s: round %u: wr %" PRIu64 " status %s\n", PROG, n,
					wc.wr_id, xr_wc_status_str(wc.status));
				return -1;
			}
		}
		if (pattern_mismatch(rslot, n + 1, 0, SLOT_SIZE) >= 0 || load64(faa) != 2u * n ||
		    load64(cas) != 2u * n + 1) {
			stop_counting();
			fprintf(stderr,
				"%s: round %u: READ %s, FAA got %" PRIu64 ", CAS got %" PRIu64 "\n",
				PROG, n,
				pattern_mismatch(rslot, n + 1, 0, SLOT_SIZE) >= 0 ? "wrong"
										  : "right",
				load64(faa), load64(cas));
			return -1;
		}
	}
	stop_counting();
	return oob_write_full(fd, "D", 1, run_deadline) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct e2e_args args = {0};
	struct side s = {0};
	bool is_server;
	int fd = -1, ret = 1;

	install_hook();
	args.port = DEFAULT_PORT;
	if (!e2e_parse_args(argc, argv, &args)) {
		fprintf(stderr,
			"usage: %s server IFNAME [-p PORT] | client IFNAME SERVER_IP [-p PORT]\n",
			PROG);
		return 2;
	}
	is_server = args.is_server;
	if (setup(&s, args.ifname))
		goto out;
	fd = e2e_oob_open(args.server_ip, args.port, E2E_ACCEPT_TIMEOUT_MS, E2E_CONNECT_RETRY_MS,
			  E2E_OOB_TIMEOUT_MS);
	if (fd < 0 || exchange(&s, fd, is_server))
		goto out;
	if (is_server ? serve(&s, fd) : drive(&s, fd))
		goto out;
	printf("[%s] %u operations checked; %" PRIu64 " allocations, %" PRIu64
	       " frees while they ran\n",
	       args.role, ROUNDS * OPS_PER_ROUND, allocs, frees);
	ret = allocs || frees;
	printf("[%s] %s\n", args.role, ret ? "FAIL: the data path touched the heap" : "PASS");
out:
	if (fd >= 0)
		close(fd);
	e2e_destroy_qp_end(&s.end);
	if (s.mr)
		xr_dereg_mr(s.mr);
	free(s.buf);
	e2e_close_port(&s.port);
	return ret;
}
