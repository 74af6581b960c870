// SPDX-License-Identifier: MIT
/*
 * The XDP fast paths under BPF_PROG_TEST_RUN (no attach): plain ACKs
 * absorbed into the QP entry, duplicate SEND/WRITE requests answered with an
 * ACK by XDP_TX, and the ICRC checks both depend on. Frames are built and
 * sealed by libxroce (xr_pkt_build, xr_pkt_seal), and what the program sends
 * back is parsed and ICRC-checked by libxroce too, so the BPF CRC is checked
 * against the userspace one in both directions.
 *
 * Each case asserts the action, that exactly the expected counters moved by
 * one, and the QP entry afterwards (xdp_ack, per-QP counters). The entries
 * carry the connection's path as the library publishes it from RTR; frames
 * that do not fit it (another source, P_Key, destination) reach neither fast
 * path, and the ACK a duplicate is answered with goes along that path,
 * whatever the duplicate's own addresses. With nothing
 * in the XSKMAP a steered frame comes back XDP_DROP as drop_no_socket; the
 * last cases bind an AF_XDP socket on lo in a private network namespace to
 * see the redirect itself (a sleeping engine gets its ACK). Frames longer
 * than a page arrive in fragments: they pass the length checks on their
 * whole length and reach the engine unchanged, duplicates included.
 * Needs root. Prints one line per case.
 */
#include "core/packet.h"
#include "xdp_test_common.h"
#include "xroce/wire.h"
#include "xroce/xroce.h"

/* Room for a 4096-byte payload: past one page, the kernel hands such a frame over in fragments. */
#define FRAME_MAX 8192
#define QPN_REQUESTER 0x7b2003
#define QPN_RESPONDER 0x7b2004
#define PEER_QPN 0x1234
#define OUR_SPORT 0xc123
#define PEER_SPORT 0xc456
#define ACK_FRAME_LEN 62
/* The entry's TOS for replies: DSCP 26 and the engine's ECN codepoint, ECT(0). */
#define PATH_TCLASS (26 << 2 | XR_ECN_ECT0)

/* Requester: PSNs up to 0xfffff0 acknowledged, sent up to 0x000010 (wraps). */
#define REQ_ACKED 0xfffff0u
#define REQ_NEXT 0x000010u
/* Responder: everything before 0x000003 placed, 77 messages completed. */
#define RESP_EPSN 0x000003u
#define RESP_MSN 77u

static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t router_mac[6] = {0x02, 0, 0, 0, 0, 0xfe};
static const uint8_t other_host_mac[6] = {0x02, 0, 0, 0, 0, 0x03};
static const uint8_t our_ip[4] = {10, 1, 0, 1};
static const uint8_t peer_ip[4] = {10, 1, 0, 2};
static const uint8_t foreign_ip[4] = {10, 1, 0, 66};

#define COUNTER(field) (1u << XT_COUNTER_INDEX(field))

struct frame {
	uint8_t data[FRAME_MAX];
	uint32_t len;
	struct xr_pkt_out out;
};

/* What the program returned: the action and the frame as it left. */
struct result {
	__u32 action;
	uint8_t data[FRAME_MAX];
	uint32_t len;
};

static int failures;

static void fail(const char *name, const char *why)
{
	failures++;
	printf("FAIL %-56s %s\n", name, why);
}

static void pass(const char *name, const char *what)
{
	printf("ok   %-56s %s\n", name, what);
}

static void set_gid_v4(union xr_gid *gid, const uint8_t ip[4])
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(gid->raw + 12, ip, 4);
}

/* How the peer's frames come to us: from its MAC and IP to ours. */
static struct xr_path from_peer(void)
{
	struct xr_path path = {.udp_sport = PEER_SPORT};

	memcpy(path.smac, peer_mac, 6);
	memcpy(path.dmac, our_mac, 6);
	set_gid_v4(&path.sgid, peer_ip);
	set_gid_v4(&path.dgid, our_ip);
	return path;
}

/* A request or response along path to one of our QPs, sealed with its ICRC. */
static void build_on(struct frame *f, const struct xr_path *path, uint8_t opcode, uint32_t dqpn,
		     uint32_t psn, uint32_t payload_len)
{
	struct xr_bth_fields bth = {.opcode = opcode, .dqpn = dqpn, .psn = psn, .ackreq = true};
	uint32_t i;

	if (xr_pkt_build(f->data, sizeof(f->data), path, &bth, payload_len, 0x4242, &f->out)) {
		fprintf(stderr, "test_xdp_fastpath: cannot build opcode 0x%02x\n", opcode);
		exit(1);
	}
	for (i = 0; i < payload_len; i++)
		f->out.payload[i] = (uint8_t)(i * 7 + 1);
	if (xr_opinfo[opcode].flags & XR_OPF_RETH) {
		uint8_t *reth = f->out.ext + xr_reth_off(xr_opinfo[opcode].flags) - XR_BTH_SIZE;

		memset(reth, 0x5a, XR_RETH_SIZE);
	}
	f->len = f->out.frame_len;
	xr_pkt_seal(&f->out);
}

/* The same from the peer. */
static void build(struct frame *f, uint8_t opcode, uint32_t dqpn, uint32_t psn,
		  uint32_t payload_len)
{
	struct xr_path path = from_peer();

	build_on(f, &path, opcode, dqpn, psn, payload_len);
}

/* A plain ACK (or NAK, by syndrome) along path to our requester. */
static void build_ack_on(struct frame *f, const struct xr_path *path, uint32_t psn,
			 uint8_t syndrome, uint32_t msn)
{
	uint8_t *aeth;

	build_on(f, path, XR_OP_RC_ACK, QPN_REQUESTER, psn, 0);
	aeth = f->out.ext;
	aeth[0] = syndrome;
	aeth[1] = msn >> 16;
	aeth[2] = msn >> 8;
	aeth[3] = msn;
	f->out.bth[8] &= 0x7f; /* ACKs request no ACK */
	xr_pkt_seal(&f->out);
}

static void build_ack(struct frame *f, uint32_t psn, uint8_t syndrome, uint32_t msn)
{
	struct xr_path path = from_peer();

	build_ack_on(f, &path, psn, syndrome, msn);
}

/* Another P_Key, sealed again: the ICRC covers it, so only the P_Key is wrong. */
static void set_pkey(struct frame *f, uint16_t pkey)
{
	f->out.bth[2] = pkey >> 8;
	f->out.bth[3] = pkey;
	xr_pkt_seal(&f->out);
}

/* Both QPs as the engine publishes them while it polls, fast paths on. */
static void reset_qps(void)
{
	struct xr_qp_entry e = {
	    .state = XR_XDP_QP_ACTIVE,
	    .qp_type = XR_QPT_RC,
	    .committed = xr_pack_psn_msn(0, 0),
	    .xdp_ack = xr_pack_psn_msn(REQ_ACKED, 0),
	    .req_next_psn = REQ_NEXT,
	    .dest_qpn = PEER_QPN,
	    .udp_sport = OUR_SPORT,
	    .fast_path = XR_XDP_FAST_ACK | XR_XDP_FAST_DUP,
	    .qpn = QPN_REQUESTER,
	    .traffic_class = PATH_TCLASS,
	    .path_valid = 1,
	};
	union xr_gid gid;

	memcpy(e.local_mac, our_mac, 6);
	memcpy(e.peer_mac, peer_mac, 6);
	set_gid_v4(&gid, our_ip);
	memcpy(e.local_gid, gid.raw, 16);
	set_gid_v4(&gid, peer_ip);
	memcpy(e.peer_gid, gid.raw, 16);
	xt_put_entry(QPN_REQUESTER, &e);
	e.qpn = QPN_RESPONDER;
	e.committed = xr_pack_psn_msn(RESP_EPSN, RESP_MSN);
	e.xdp_ack = 0;
	e.req_next_psn = 0;
	xt_put_entry(QPN_RESPONDER, &e);
}

/*
 * Runs the program on f; true when it returned expect_action and exactly the
 * counters in expect_counters (a COUNTER() mask) moved, each by one.
 * Quiet unless it fails when report is false (for sweeps).
 */
static bool run(const char *name, const struct frame *f, __u32 expect_action, __u32 expect_counters,
		struct result *res, bool report)
{
	char why[200];
	size_t len;

	res->action = xt_run(f->data, f->len, res->data, sizeof(res->data), &len, expect_action,
			     expect_counters, why, sizeof(why));
	res->len = len;
	if (why[0]) {
		fail(name, why);
		return false;
	}
	if (report)
		pass(name, xt_action_name(expect_action));
	return true;
}

static void expect_u64(const char *name, const char *what, __u64 got, __u64 want)
{
	char why[200];

	if (got == want)
		return;
	snprintf(why, sizeof(why), "%s is 0x%llx, expected 0x%llx", what, (unsigned long long)got,
		 (unsigned long long)want);
	fail(name, why);
}

/* ---- ACK absorption on the requester */

static void test_ack_absorbed(void)
{
	struct result res;
	struct frame f;
	__u64 absorbed;

	reset_qps();
	absorbed = xt_get_entry(QPN_REQUESTER).acks_absorbed;
	/* 0xfffff0 + 8 crosses the 24-bit wrap: 0x000004 lies inside the window. */
	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK in the window is absorbed", &f, XDP_DROP, COUNTER(acks_absorbed), &res, true);
	expect_u64("ACK in the window: xdp_ack", "xdp_ack", xt_get_entry(QPN_REQUESTER).xdp_ack,
		   xr_pack_psn_msn(0x000004, 500));
	expect_u64("ACK in the window: entry", "acks_absorbed",
		   xt_get_entry(QPN_REQUESTER).acks_absorbed, absorbed + 1);

	/* The last PSN sent (REQ_NEXT - 1) is the far edge of the window. */
	build_ack(&f, REQ_NEXT - 1, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 501);
	run("ACK for the last PSN sent is absorbed", &f, XDP_DROP, COUNTER(acks_absorbed), &res,
	    true);
	expect_u64("ACK for the last PSN sent: xdp_ack", "xdp_ack",
		   xt_get_entry(QPN_REQUESTER).xdp_ack, xr_pack_psn_msn(REQ_NEXT - 1, 501));

	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("older ACK is absorbed", &f, XDP_DROP, COUNTER(acks_absorbed), &res, true);
	build_ack(&f, REQ_NEXT - 1, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 501);
	run("repeated ACK is absorbed", &f, XDP_DROP, COUNTER(acks_absorbed), &res, true);
	expect_u64("older ACKs: xdp_ack never moves back", "xdp_ack",
		   xt_get_entry(QPN_REQUESTER).xdp_ack, xr_pack_psn_msn(REQ_NEXT - 1, 501));
	expect_u64("four ACKs: entry", "acks_absorbed", xt_get_entry(QPN_REQUESTER).acks_absorbed,
		   absorbed + 4);

	/* Further behind than anything in flight: the engine's to count as a ghost. */
	build_ack(&f, xr_psn_add(REQ_NEXT - 1, XR_PSN_MASK - 1024),
		  XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 1);
	run("ACK 1025 behind goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res,
	    true);
	build_ack(&f, xr_psn_add(REQ_NEXT - 1, XR_PSN_MASK - (1u << 21)),
		  XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 1);
	run("ACK 2^21 behind goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res,
	    true);
	build_ack(&f, xr_psn_add(REQ_NEXT - 1, XR_PSN_MASK - 1023),
		  XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 1);
	run("ACK 1024 behind is still absorbed", &f, XDP_DROP, COUNTER(acks_absorbed), &res, true);
	expect_u64("stale ACKs: xdp_ack never moves back", "xdp_ack",
		   xt_get_entry(QPN_REQUESTER).xdp_ack, xr_pack_psn_msn(REQ_NEXT - 1, 501));
}

static void test_ack_declined(void)
{
	struct xr_qp_entry e;
	struct result res;
	struct frame f;
	__u64 start;

	reset_qps();
	start = xt_get_entry(QPN_REQUESTER).xdp_ack;

	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	f.data[f.out.icrc_off] ^= 0x01;
	run("ACK with a bad ICRC", &f, XDP_DROP, COUNTER(drop_bad_icrc), &res, true);
	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	f.out.ext[3] ^= 0x80; /* the MSN, after sealing */
	run("ACK with a changed MSN (ICRC no longer matches)", &f, XDP_DROP, COUNTER(drop_bad_icrc),
	    &res, true);

	build_ack(&f, REQ_NEXT, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK for a PSN never sent goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build_ack(&f, 0x000004, XR_AETH_NAK | XR_NAK_PSN_SEQ_ERR, 500);
	run("NAK (PSN sequence error) goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build_ack(&f, 0x000004, XR_AETH_NAK | XR_NAK_REMOTE_ACCESS_ERR, 500);
	run("NAK (remote access error) goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build_ack(&f, 0x000004, XR_AETH_RNR_NAK | 5, 500);
	run("RNR NAK goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res, true);

	build(&f, XR_OP_RC_READ_RESPONSE_ONLY, QPN_REQUESTER, 0x000004, 8);
	run("READ response goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res, true);
	build(&f, XR_OP_RC_ATOMIC_ACK, QPN_REQUESTER, 0x000004, 0);
	run("atomic ACK goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res, true);

	/* An IPv6 path (frames fit it): the fast paths handle IPv4 only. */
	{
		struct xr_path path = from_peer();
		struct xr_bth_fields bth = {
		    .opcode = XR_OP_RC_ACK, .dqpn = QPN_REQUESTER, .psn = 0x000004};
		struct xr_qp_entry v4 = xt_get_entry(QPN_REQUESTER);

		memset(path.sgid.raw, 0xfd, 16);
		memset(path.dgid.raw, 0xfe, 16);
		e = v4;
		memcpy(e.peer_gid, path.sgid.raw, 16);
		memcpy(e.local_gid, path.dgid.raw, 16);
		xt_put_entry(QPN_REQUESTER, &e);
		xr_pkt_build(f.data, sizeof(f.data), &path, &bth, 0, 0, &f.out);
		f.out.ext[0] = XR_AETH_ACK_UNLIMITED;
		f.len = f.out.frame_len;
		xr_pkt_seal(&f.out);
		run("ipv6 ACK goes to the engine", &f, XDP_DROP,
		    COUNTER(drop_no_socket) | COUNTER(roce_ipv6), &res, true);
		xt_put_entry(QPN_REQUESTER, &v4);
	}

	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	f.data[XR_ETH_HLEN + 1] = XR_ECN_CE; /* TOS is masked out of the ICRC */
	run("ACK marked CE goes to the engine (it owes a CNP)", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);

	e = xt_get_entry(QPN_REQUESTER);
	e.fast_path = XR_XDP_FAST_DUP;
	xt_put_entry(QPN_REQUESTER, &e);
	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK with the ACK fast path off goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	e.fast_path = XR_XDP_FAST_ACK | XR_XDP_FAST_DUP;
	e.qp_type = XR_QPT_UC;
	xt_put_entry(QPN_REQUESTER, &e);
	run("ACK to a UC QP goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res, true);

	expect_u64("declined ACKs: xdp_ack unchanged", "xdp_ack",
		   xt_get_entry(QPN_REQUESTER).xdp_ack, start);
	expect_u64("declined ACKs: entry", "acks_absorbed",
		   xt_get_entry(QPN_REQUESTER).acks_absorbed, 0);
}

/* ---- duplicate requests answered on the responder */

/* Checks that an answered duplicate left as the ACK the spec asks for. */
static void check_ack_out(const char *name, const struct result *res)
{
	enum xr_parse_result r;
	struct xr_pkt pkt;
	const uint8_t *ip;
	char why[200] = "";
	uint32_t sum = 0;
	int i;

	if (res->len != ACK_FRAME_LEN) {
		snprintf(why, sizeof(why), "frame is %u bytes, expected %d", res->len,
			 ACK_FRAME_LEN);
		fail(name, why);
		return;
	}
	r = xr_pkt_parse(res->data, res->len, &pkt);
	if (r != XR_PARSE_OK) {
		snprintf(why, sizeof(why), "does not parse: %s", xr_parse_result_str(r));
		fail(name, why);
		return;
	}
	ip = res->data + pkt.l3_off;
	for (i = 0; i < XR_IPV4_HLEN; i += 2)
		sum += ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);

	if (!xr_pkt_icrc_ok(&pkt))
		snprintf(why, sizeof(why), "ICRC does not verify");
	else if (pkt.opcode != XR_OP_RC_ACK || pkt.aeth_syndrome != XR_AETH_ACK_UNLIMITED)
		snprintf(why, sizeof(why), "opcode 0x%02x syndrome 0x%02x, expected ACK 0x1f",
			 pkt.opcode, pkt.aeth_syndrome);
	else if (pkt.psn != xr_psn_add(RESP_EPSN, XR_PSN_MASK) || pkt.aeth_msn != RESP_MSN)
		snprintf(why, sizeof(why), "PSN 0x%06x MSN %u, expected 0x%06x %u", pkt.psn,
			 pkt.aeth_msn, xr_psn_add(RESP_EPSN, XR_PSN_MASK), RESP_MSN);
	else if (pkt.dqpn != PEER_QPN || pkt.pkey != XR_DEFAULT_PKEY || pkt.ackreq || pkt.se ||
		 res->data[pkt.bth_off + 1] != 0)
		snprintf(why, sizeof(why), "BTH: QPN 0x%x pkey 0x%x flags 0x%02x", pkt.dqpn,
			 pkt.pkey, res->data[pkt.bth_off + 1]);
	else if (pkt.udp_sport != OUR_SPORT ||
		 (res->data[pkt.udp_off + 2] << 8 | res->data[pkt.udp_off + 3]) !=
		     XR_ROCEV2_UDP_PORT ||
		 res->data[pkt.udp_off + 6] || res->data[pkt.udp_off + 7])
		snprintf(why, sizeof(why), "UDP ports or checksum wrong (source 0x%04x)",
			 pkt.udp_sport);
	else if (memcmp(pkt.dmac, peer_mac, 6) || memcmp(pkt.smac, our_mac, 6))
		snprintf(why, sizeof(why), "MAC addresses not the path's");
	else if (memcmp(ip + 12, our_ip, 4) || memcmp(ip + 16, peer_ip, 4))
		snprintf(why, sizeof(why), "IP addresses not the path's");
	else if (ip[1] != PATH_TCLASS)
		snprintf(why, sizeof(why),
			 "TOS 0x%02x, expected the entry's DSCP and ECT(0), 0x%02x", ip[1],
			 PATH_TCLASS);
	else if (ip[8] != 64 || ip[6] != 0x40 || ip[7] != 0 || ip[4] || ip[5] || sum != 0xffff)
		snprintf(why, sizeof(why),
			 "IPv4: TTL %u, frag 0x%02x%02x, ID 0x%02x%02x, checksum sum 0x%x", ip[8],
			 ip[6], ip[7], ip[4], ip[5], sum);
	if (why[0])
		fail(name, why);
}

static void answered(const char *name, uint8_t opcode, uint32_t psn, uint32_t payload_len)
{
	struct result res;
	struct frame f;

	build(&f, opcode, QPN_RESPONDER, psn, payload_len);
	if (run(name, &f, XDP_TX, COUNTER(dups_answered), &res, true))
		check_ack_out(name, &res);
}

static void test_duplicates_answered(void)
{
	__u64 before;

	reset_qps();
	before = xt_get_entry(QPN_RESPONDER).dups_answered;
	/* 0xfffffe is 5 behind 0x000003 across the wrap. */
	answered("duplicate SEND ONLY (100 bytes)", XR_OP_RC_SEND_ONLY, 0xfffffe, 100);
	answered("duplicate WRITE FIRST (1024 bytes)", XR_OP_RC_WRITE_FIRST, 0xfffffe, 1024);
	answered("duplicate SEND ONLY, empty (frame grows to 62)", XR_OP_RC_SEND_ONLY,
		 RESP_EPSN - 1, 0);
	answered("duplicate SEND LAST with immediate", XR_OP_RC_SEND_LAST_IMM, RESP_EPSN - 2, 33);
	answered("duplicate WRITE MIDDLE (2048 bytes)", XR_OP_RC_WRITE_MIDDLE, RESP_EPSN - 3, 2048);
	answered("duplicate WRITE ONLY with immediate", XR_OP_RC_WRITE_ONLY_IMM, RESP_EPSN - 1, 8);
	answered("duplicate SEND ONLY with invalidate", XR_OP_RC_SEND_ONLY_INV, RESP_EPSN - 1, 8);
	answered("duplicate 2^22 behind (edge of the window)", XR_OP_RC_SEND_ONLY,
		 xr_psn_add(RESP_EPSN, (1u << 24) - (1u << 22)), 8);
	expect_u64("8 duplicates: entry", "dups_answered",
		   xt_get_entry(QPN_RESPONDER).dups_answered, before + 8);
}

/* Every length the CRC's chunking distinguishes, answered and, corrupted, refused. */
static void test_duplicate_icrc_sweep(void)
{
	unsigned int len, answered = 0, refused = 0;
	struct result res;
	struct frame f;
	char name[80];

	reset_qps();
	for (len = 1; len <= 300; len++) {
		snprintf(name, sizeof(name), "duplicate SEND ONLY of %u bytes", len);
		build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, len);
		if (run(name, &f, XDP_TX, COUNTER(dups_answered), &res, false)) {
			check_ack_out(name, &res);
			answered++;
		}
		/* The last byte before the ICRC (payload or pad): the CRC must reach the end. */
		build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, len);
		f.data[f.out.icrc_off - 1] ^= 0x40;
		snprintf(name, sizeof(name), "duplicate SEND ONLY of %u bytes, last byte flipped",
			 len);
		refused += run(name, &f, XDP_DROP, COUNTER(drop_bad_icrc), &res, false);
	}
	if (answered == 300 && refused == 300)
		pass("duplicate SEND ONLY of 1..300 bytes", "all answered, all refused corrupted");

	build(&f, XR_OP_RC_WRITE_FIRST, QPN_RESPONDER, RESP_EPSN - 1, 2000);
	f.out.payload[0] ^= 1;
	run("duplicate WRITE FIRST, first payload byte flipped", &f, XDP_DROP,
	    COUNTER(drop_bad_icrc), &res, true);
	build(&f, XR_OP_RC_WRITE_FIRST, QPN_RESPONDER, RESP_EPSN - 1, 2000);
	f.out.payload[1000] ^= 1;
	run("duplicate WRITE FIRST, byte 1000 flipped", &f, XDP_DROP, COUNTER(drop_bad_icrc), &res,
	    true);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 16);
	f.data[XR_ETH_HLEN + 1] = 0xb8; /* TOS is masked out of the ICRC */
	f.data[XR_ETH_HLEN + 8] = 3;	/* so is the TTL */
	if (run("duplicate with TOS and TTL changed in flight", &f, XDP_TX, COUNTER(dups_answered),
		&res, true))
		check_ack_out("duplicate with TOS and TTL changed in flight", &res);
}

static void test_duplicates_declined(void)
{
	struct xr_qp_entry e;
	struct result res;
	struct frame f;

	reset_qps();
	build(&f, XR_OP_RC_READ_REQUEST, QPN_RESPONDER, RESP_EPSN - 1, 0);
	run("duplicate READ request goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build(&f, XR_OP_RC_CMP_SWAP, QPN_RESPONDER, RESP_EPSN - 1, 0);
	run("duplicate compare-and-swap goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build(&f, XR_OP_RC_MASKED_FETCH_ADD, QPN_RESPONDER, RESP_EPSN - 1, 0);
	run("duplicate masked fetch-and-add goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN, 100);
	run("expected SEND ONLY goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket), &res,
	    true);
	build(&f, XR_OP_RC_WRITE_FIRST, QPN_RESPONDER, RESP_EPSN + 5, 100);
	run("out-of-sequence WRITE FIRST goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER,
	      xr_psn_add(RESP_EPSN, (1u << 24) - (1u << 22) - 1), 8);
	run("SEND more than 2^22 behind goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);
	build(&f, XR_OP_UC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	run("UC opcode behind the PSN goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);

	/* 802.1Q-tagged: the ACK would need the tag too; the engine builds it. */
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	memmove(f.data + 16, f.data + 12, f.len - 12);
	f.data[12] = 0x81;
	f.data[13] = 0x00;
	f.data[14] = 0;
	f.data[15] = 7;
	f.len += 4;
	run("802.1Q-tagged duplicate goes to the engine", &f, XDP_DROP, COUNTER(drop_no_socket),
	    &res, true);

	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	f.data[XR_ETH_HLEN + 1] = 0xb8 | XR_ECN_CE;
	run("duplicate marked CE goes to the engine (it owes a CNP)", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);

	e = xt_get_entry(QPN_RESPONDER);
	e.fast_path = XR_XDP_FAST_ACK;
	xt_put_entry(QPN_RESPONDER, &e);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	run("duplicate with the DUP fast path off goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	expect_u64("declined duplicates: entry", "dups_answered",
		   xt_get_entry(QPN_RESPONDER).dups_answered, 0);
}

/* ---- binding: only frames of the connection reach the fast paths */

/* Whether neither fast path acted on the QPs: no ACK absorbed, no duplicate answered. */
static void expect_untouched(const char *name, __u64 xdp_ack)
{
	struct xr_qp_entry req = xt_get_entry(QPN_REQUESTER), resp = xt_get_entry(QPN_RESPONDER);

	expect_u64(name, "xdp_ack", req.xdp_ack, xdp_ack);
	expect_u64(name, "acks_absorbed", req.acks_absorbed, 0);
	expect_u64(name, "dups_answered", resp.dups_answered, 0);
}

static void test_binding(void)
{
	struct xr_path path;
	struct xr_qp_entry e;
	struct result res;
	struct frame f;
	__u64 start;

	reset_qps();
	start = xt_get_entry(QPN_REQUESTER).xdp_ack;

	path = from_peer();
	set_gid_v4(&path.sgid, foreign_ip);
	build_ack_on(&f, &path, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK from a foreign IPv4 source", &f, XDP_DROP, COUNTER(drop_bad_src), &res, true);
	build_on(&f, &path, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	run("duplicate from a foreign IPv4 source", &f, XDP_DROP, COUNTER(drop_bad_src), &res,
	    true);
	/* The peer's IP from another MAC is a routed frame: only the IPs bind it. */
	path = from_peer();
	set_gid_v4(&path.dgid, foreign_ip);
	build_ack_on(&f, &path, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK to another IPv4 address", &f, XDP_DROP, COUNTER(drop_bad_dst), &res, true);
	build_on(&f, &path, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	run("duplicate to another IPv4 address", &f, XDP_DROP, COUNTER(drop_bad_dst), &res, true);
	path = from_peer();
	memcpy(path.dmac, other_host_mac, 6);
	build_ack_on(&f, &path, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK to another host's MAC", &f, XDP_DROP, COUNTER(drop_bad_dst), &res, true);
	build_on(&f, &path, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	run("duplicate to another host's MAC", &f, XDP_DROP, COUNTER(drop_bad_dst), &res, true);
	path.dmac[0] = 0x01;
	build_ack_on(&f, &path, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK to a multicast MAC", &f, XDP_DROP, COUNTER(drop_bad_dst), &res, true);

	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	set_pkey(&f, 0x7fff);
	run("ACK with P_Key 0x7fff (ICRC right)", &f, XDP_DROP, COUNTER(drop_bad_pkey), &res, true);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	set_pkey(&f, 0x7fff);
	run("duplicate with P_Key 0x7fff (ICRC right)", &f, XDP_DROP, COUNTER(drop_bad_pkey), &res,
	    true);
	/* The slot's QP is QPN_REQUESTER; a QPN that merely shares its slot is none of ours. */
	path = from_peer();
	build_on(&f, &path, XR_OP_RC_ACK, QPN_REQUESTER + XR_MAX_QP, 0x000004, 0);
	f.out.ext[0] = XR_AETH_ACK_UNLIMITED;
	xr_pkt_seal(&f.out);
	run("ACK for a QPN sharing the requester's slot", &f, XDP_DROP, COUNTER(drop_unknown_qp),
	    &res, true);
	expect_untouched("frames not bound to the connection: entries", start);

	/* An RC QP without its path (never so while ACTIVE) gets no fast path. */
	e = xt_get_entry(QPN_REQUESTER);
	e.path_valid = 0;
	xt_put_entry(QPN_REQUESTER, &e);
	e = xt_get_entry(QPN_RESPONDER);
	e.path_valid = 0;
	xt_put_entry(QPN_RESPONDER, &e);
	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK to an RC QP without a path goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 8);
	run("duplicate to an RC QP without a path goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	expect_untouched("RC QPs without a path: entries", start);
}

/*
 * The answer goes along the stored path, whatever the duplicate's own
 * addresses: through a router its source MAC is the router's, its TOS the
 * network's. check_ack_out compares every address with the path.
 */
static void test_duplicate_answer_path(void)
{
	const char *name = "duplicate via a router: ACK to the path's peer MAC";
	struct xr_path path = from_peer();
	struct result res;
	struct frame f;

	reset_qps();
	memcpy(path.smac, router_mac, 6);
	path.traffic_class = 0;
	path.ecn = XR_ECN_ECT1;
	path.udp_sport = 0xd00d;
	build_on(&f, &path, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 40);
	if (run(name, &f, XDP_TX, COUNTER(dups_answered), &res, true)) {
		check_ack_out(name, &res);
		if (!memcmp(res.data, router_mac, 6))
			fail(name, "answered to the router's MAC");
	}
}

/* ---- frames longer than a page: the test run gives them fragments past data_end */

static void test_frames_with_fragments(void)
{
	struct result res;
	struct frame f;

	reset_qps();
	build(&f, XR_OP_RC_WRITE_ONLY, QPN_RESPONDER, RESP_EPSN, 4096);
	run("expected WRITE ONLY of 4096 bytes (fragmented) goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	if (res.len != f.len || memcmp(res.data, f.data, f.len))
		fail("expected WRITE ONLY of 4096 bytes (fragmented)", "the frame was changed");
	build(&f, XR_OP_RC_WRITE_ONLY, QPN_RESPONDER, RESP_EPSN - 1, 4096);
	run("duplicate WRITE ONLY of 4096 bytes (fragmented) goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	if (res.len != f.len || memcmp(res.data, f.data, f.len))
		fail("duplicate WRITE ONLY of 4096 bytes (fragmented)", "the frame was changed");
	build(&f, XR_OP_RC_SEND_LAST, QPN_RESPONDER, RESP_EPSN - 2, 3900);
	run("duplicate SEND LAST of 3900 bytes (fragmented) goes to the engine", &f, XDP_DROP,
	    COUNTER(drop_no_socket), &res, true);
	build(&f, XR_OP_RC_WRITE_ONLY, QPN_RESPONDER, RESP_EPSN, 4096);
	f.len -= 100;
	run("fragmented WRITE ONLY 100 bytes short of its UDP length is dropped", &f, XDP_DROP,
	    COUNTER(drop_bad_length), &res, true);
	expect_u64("fragmented duplicates: entry", "dups_answered",
		   xt_get_entry(QPN_RESPONDER).dups_answered, 0);
}

/* ---- with an AF_XDP socket: what goes to the engine really is redirected */

static void with_socket_cases(void)
{
	struct xr_qp_entry e;
	struct result res;
	struct frame f;

	reset_qps();
	e = xt_get_entry(QPN_REQUESTER);
	e.engine_sleeping = 1;
	xt_put_entry(QPN_REQUESTER, &e);
	build_ack(&f, 0x000004, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK while the engine sleeps wakes it", &f, XDP_REDIRECT,
	    COUNTER(redirected) | COUNTER(acks_to_engine), &res, true);
	e = xt_get_entry(QPN_REQUESTER);
	/* Recorded as well, so that xdp_ack keeps up with what the engine hears. */
	expect_u64("ACK while the engine sleeps: xdp_ack", "xdp_ack", e.xdp_ack,
		   xr_pack_psn_msn(0x000004, 500));
	expect_u64("ACK while the engine sleeps: entry", "rx_frames", e.rx_frames, 1);
	build_ack(&f, 0x000002, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 499);
	run("older ACK while the engine sleeps is absorbed", &f, XDP_DROP, COUNTER(acks_absorbed),
	    &res, true);

	e.engine_sleeping = 0;
	xt_put_entry(QPN_REQUESTER, &e);
	build_ack(&f, REQ_NEXT + 1, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 500);
	run("ACK beyond the PSNs sent is redirected", &f, XDP_REDIRECT, COUNTER(redirected), &res,
	    true);
	build(&f, XR_OP_RC_SEND_ONLY, QPN_RESPONDER, RESP_EPSN, 64);
	run("expected SEND ONLY is redirected", &f, XDP_REDIRECT, COUNTER(redirected), &res, true);
	build(&f, XR_OP_RC_READ_REQUEST, QPN_RESPONDER, RESP_EPSN - 1, 0);
	run("duplicate READ request is redirected", &f, XDP_REDIRECT, COUNTER(redirected), &res,
	    true);
}

static void test_with_socket(void)
{
	int err = xt_with_socket_on_lo(with_socket_cases);

	if (err)
		fail("AF_XDP socket on lo for the redirect cases", strerror(-err));
}

int main(void)
{
	if (xt_load("test_xdp_fastpath"))
		return 1;

	test_ack_absorbed();
	test_ack_declined();
	test_duplicates_answered();
	test_duplicate_icrc_sweep();
	test_duplicates_declined();
	test_binding();
	test_duplicate_answer_path();
	test_frames_with_fragments();
	test_with_socket();
	return xt_finish(failures);
}
