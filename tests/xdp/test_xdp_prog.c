// SPDX-License-Identifier: MIT
/*
 * Runs the XDP program on crafted frames with BPF_PROG_TEST_RUN (no attach)
 * and checks, for each frame, the action it returns and that exactly the
 * counter for its reason moved by one and no other did.
 *
 * Steering: with nothing in the XSKMAP, a frame the program would steer
 * comes back XDP_DROP counted as drop_no_socket; that is what most valid
 * frames assert. The last case binds an AF_XDP socket to lo in a private
 * network namespace, puts it in the XSKMAP slot of queue 0, and asserts
 * XDP_REDIRECT, the redirected counter and the QP's rx_frames. (Test runs do
 * not perform the redirect; the program's verdict is what is checked.)
 *
 * The QPNs are not XR_QPN_BASE plus their slot, as a device's random ones
 * are not. Frames go from PEER_MAC, 10.0.0.1 (fd00::1) to OUR_MAC, 10.0.0.2
 * (fd00::2); the entries' addresses say so, and the binding cases change one
 * address at a time.
 *
 * ICRCs are left zero: with the QPs' fast paths off the program checks
 * none (test_xdp_fastpath covers the fast paths and their ICRC checks).
 * Needs root (loading BPF programs). Prints one line per case.
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "xdp_test_common.h"
#include "xroce/wire.h"

#define QPN_ACTIVE 0x5a1005
#define QPN_CLOSED 0x5a1006
#define QPN_NEVER_OPENED 0x5a1007
#define QPN_UD 0x5a1009
/* Connected QPs whose path is set (RTR and on): bound to their peer's IP too. */
#define QPN_RC_V4 0x5a100a
#define QPN_RC_V6 0x5a100b
#define QPN_UC_V4 0x5a100c
#define UD_QKEY 0x11111111u
#define FRAME_MAX 512
#define VLAN_TAG_SIZE 4

#define COUNTER(field) XT_COUNTER_INDEX(field)

struct frame {
	uint8_t data[FRAME_MAX];
	size_t len;
	size_t l3; /* offsets of the IP, UDP and BTH headers */
	size_t udp;
	size_t bth;
};

struct roce_spec {
	bool ipv6;
	bool vlan;
	bool ip_options; /* one 4-byte IPv4 option (IHL 6) */
	uint8_t opcode;
	uint32_t qpn;
	uint16_t payload;
	uint8_t pad; /* BTH PadCnt; as many pad bytes are added */
	uint16_t dport;
};

static const uint8_t our_mac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t peer_mac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t other_host_mac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x03};
static const uint8_t our_ip4[4] = {10, 0, 0, 2};
static const uint8_t peer_ip4[4] = {10, 0, 0, 1};
static const uint8_t our_ip6[16] = {0xfd, [15] = 2};
static const uint8_t peer_ip6[16] = {0xfd, [15] = 1};

static int failures;

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static uint16_t ipv4_checksum(const uint8_t *hdr, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i < len; i += 2)
		sum += (hdr[i] << 8) | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Ethernet header (and VLAN tag); returns the offset of the L3 header. */
static size_t put_ethernet(struct frame *f, uint16_t proto, bool vlan)
{
	size_t off = 2 * ETH_ALEN;

	memcpy(f->data, our_mac, ETH_ALEN);
	memcpy(f->data + ETH_ALEN, peer_mac, ETH_ALEN);
	if (vlan) {
		put16(f->data + off, ETH_P_8021Q);
		put16(f->data + off + 2, 42);
		off += VLAN_TAG_SIZE;
	}
	put16(f->data + off, proto);
	return off + 2;
}

/* IPv4 header without options (or with one NOP-padded option). */
static size_t put_ipv4(struct frame *f, size_t off, uint8_t protocol, size_t payload, bool options)
{
	uint8_t *ip = f->data + off;
	size_t ihl = options ? 24 : 20;

	ip[0] = 0x40 | (ihl / 4);
	put16(ip + 2, ihl + payload);
	put16(ip + 6, 0x4000); /* DF, as rxe sends */
	ip[8] = 64;
	ip[9] = protocol;
	memcpy(ip + 12, peer_ip4, 4);
	memcpy(ip + 16, our_ip4, 4);
	if (options)
		memset(ip + 20, 1, 4); /* NOP options */
	put16(ip + 10, ipv4_checksum(ip, ihl));
	return off + ihl;
}

static size_t put_ipv6(struct frame *f, size_t off, uint8_t nexthdr, size_t payload)
{
	uint8_t *ip = f->data + off;

	ip[0] = 0x60;
	put16(ip + 4, payload);
	ip[6] = nexthdr;
	ip[7] = 64;
	memcpy(ip + 8, peer_ip6, 16);
	memcpy(ip + 24, our_ip6, 16);
	return off + 40;
}

static size_t put_udp(struct frame *f, size_t off, uint16_t dport, size_t payload)
{
	uint8_t *udp = f->data + off;

	put16(udp, 0xc000 | 0x123);
	put16(udp + 2, dport);
	put16(udp + 4, sizeof(struct udphdr) + payload);
	return off + sizeof(struct udphdr);
}

/* A well-formed RoCEv2 frame; invalid opcodes get a bare BTH. */
static void build_roce(struct frame *f, const struct roce_spec *s)
{
	size_t hdr_len = xr_opinfo[s->opcode].hdr_len ?: XR_BTH_SIZE;
	size_t roce_len = hdr_len + s->payload + s->pad + XR_ICRC_SIZE;
	size_t udp_len = sizeof(struct udphdr) + roce_len;
	uint8_t *bth;

	memset(f, 0, sizeof(*f));
	f->l3 = put_ethernet(f, s->ipv6 ? ETH_P_IPV6 : ETH_P_IP, s->vlan);
	if (s->ipv6)
		f->udp = put_ipv6(f, f->l3, IPPROTO_UDP, udp_len);
	else
		f->udp = put_ipv4(f, f->l3, IPPROTO_UDP, udp_len, s->ip_options);
	f->bth = put_udp(f, f->udp, s->dport ?: XR_ROCEV2_UDP_PORT, roce_len);
	bth = f->data + f->bth;
	bth[0] = s->opcode;
	bth[1] = s->pad << XR_BTH_PAD_SHIFT;
	put16(bth + 2, XR_DEFAULT_PKEY);
	put32(bth + 4, s->qpn);
	put32(bth + 8, XR_BTH_ACKREQ | 1000);
	memset(f->data + f->bth + hdr_len, 0xab, s->payload);
	f->len = f->bth + roce_len;
}

static struct roce_spec send_only(void)
{
	return (struct roce_spec){
	    .opcode = XR_OP_RC_SEND_ONLY,
	    .qpn = QPN_ACTIVE,
	    .payload = 16,
	};
}

static __u64 qp_rx_frames(__u32 qpn)
{
	return xt_get_entry(qpn).rx_frames;
}

/*
 * Runs the program on the first len bytes of f and checks the action and
 * that counter `expect_counter` went up by one and nothing else moved.
 * Quiet unless it fails when report is false (for sweeps).
 */
static bool frame_is_ipv6(const struct frame *f)
{
	return f->l3 >= 2 && (f->data[f->l3 - 2] << 8 | f->data[f->l3 - 1]) == ETH_P_IPV6;
}

static bool run_case(const char *name, const struct frame *f, size_t len, __u32 expect_action,
		     size_t expect_counter, bool report)
{
	uint8_t out[FRAME_MAX];
	size_t out_len;
	char why[200];

	__u32 expect_counters = 1u << expect_counter;

	/* Every RoCEv2 frame over IPv6 is counted once more, whatever becomes of it. */
	if (frame_is_ipv6(f) && expect_counter != COUNTER(passed_non_roce))
		expect_counters |= 1u << COUNTER(roce_ipv6);
	xt_run(f->data, len, out, sizeof(out), &out_len, expect_action, expect_counters, why,
	       sizeof(why));
	if (why[0]) {
		failures++;
		printf("FAIL %-52s %s\n", name, why);
		return false;
	}
	if (report)
		printf("ok   %-52s %s, %s\n", name, xt_action_name(expect_action),
		       xt_counter_names[expect_counter]);
	return true;
}

static void check(const char *name, const struct frame *f, __u32 action, size_t counter)
{
	run_case(name, f, f->len, action, counter, true);
}

static void check_roce(const char *name, const struct roce_spec *s, __u32 action, size_t counter)
{
	struct frame f;

	build_roce(&f, s);
	check(name, &f, action, counter);
}

/* An entry as the library publishes a QP of that type before it has a path. */
static struct xr_qp_entry entry_for(__u32 qpn, __u32 state, __u32 qp_type)
{
	struct xr_qp_entry e = {.state = state, .qp_type = qp_type, .qpn = qpn};

	memcpy(e.local_mac, our_mac, ETH_ALEN);
	return e;
}

static void set_qp_state(__u32 qpn, __u32 state)
{
	struct xr_qp_entry entry = entry_for(qpn, state, XR_QPT_RC);

	xt_put_entry(qpn, &entry);
}

static void gid_of_ip4(uint8_t gid[16], const uint8_t ip[4])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, ip, 4);
}

/* A connected QP in RTR or later: its path from our_* to peer_*. */
static void set_connected_qp(__u32 qpn, __u32 qp_type, bool ipv6)
{
	struct xr_qp_entry e = entry_for(qpn, XR_XDP_QP_ACTIVE, qp_type);

	memcpy(e.peer_mac, peer_mac, ETH_ALEN);
	if (ipv6) {
		memcpy(e.local_gid, our_ip6, 16);
		memcpy(e.peer_gid, peer_ip6, 16);
	} else {
		gid_of_ip4(e.local_gid, our_ip4);
		gid_of_ip4(e.peer_gid, peer_ip4);
	}
	e.path_valid = 1;
	xt_put_entry(qpn, &e);
}

static void test_valid_frames(void)
{
	struct roce_spec s = send_only();
	struct frame f;

	check_roce("ipv4 SEND ONLY, active QP, no socket", &s, XDP_DROP, COUNTER(drop_no_socket));
	s.pad = 3;
	check_roce("ipv4 SEND ONLY with 3 pad bytes", &s, XDP_DROP, COUNTER(drop_no_socket));
	s = send_only();
	s.ipv6 = true;
	check_roce("ipv6 SEND ONLY, active QP, no socket", &s, XDP_DROP, COUNTER(drop_no_socket));
	s = send_only();
	s.vlan = true;
	check_roce("802.1Q-tagged ipv4 SEND ONLY", &s, XDP_DROP, COUNTER(drop_no_socket));
	s = send_only();
	s.ip_options = true;
	check_roce("ipv4 with options (IHL 6) SEND ONLY", &s, XDP_DROP, COUNTER(drop_no_socket));

	/* Ethernet pads a short frame to 60 bytes; UDP length, not frame length, counts. */
	s = send_only();
	s.payload = 0;
	build_roce(&f, &s);
	f.len = ETH_ZLEN;
	check("SEND ONLY with Ethernet padding after the ICRC", &f, XDP_DROP,
	      COUNTER(drop_no_socket));
	if (qp_rx_frames(QPN_ACTIVE) != 0) {
		failures++;
		printf("FAIL %-52s rx_frames moved without a socket\n", "rx_frames");
	}
}

/* Every opcode: valid ones reach the socket lookup, the others are dropped. */
static void test_all_opcodes(void)
{
	struct roce_spec s = send_only();
	unsigned int op, valid = 0, ok = 0;
	char name[64];
	struct frame f;

	for (op = 0; op < 256; op++) {
		bool is_valid = xr_opinfo[op].flags & XR_OPF_VALID;

		s.opcode = op;
		s.payload = xr_opinfo[op].flags & XR_OPF_PAYLOAD ? 16 : 0;
		build_roce(&f, &s);
		snprintf(name, sizeof(name), "opcode 0x%02x", op);
		valid += is_valid;
		ok +=
		    run_case(name, &f, f.len, XDP_DROP,
			     is_valid ? COUNTER(drop_no_socket) : COUNTER(drop_bad_opcode), false);
	}
	if (ok == 256)
		printf("ok   %-52s %u valid -> drop_no_socket, %u -> drop_bad_opcode\n",
		       "every opcode 0x00-0xff", valid, 256 - valid);
	/*
	 * RC 0x00-0x14, 0x16, 0x17; UC 0x20-0x2b; UD 0x64, 0x65; RoCEv2's CNP
	 * 0x81; xroce's masked atomics 0xc0, 0xc1, SACK 0xc2 and self-placing
	 * WRITEs 0xe6-0xeb.
	 * Guards the sweep against a table that marks nothing (or everything)
	 * valid; update it when wire.h gains opcodes.
	 */
	if (valid != 23 + 12 + 2 + 1 + 3 + 6) {
		failures++;
		printf("FAIL %-52s %u valid opcodes, expected 47\n", "opcode table", valid);
	}
	s.opcode = 0x15;
	check_roce("opcode 0x15 (RC gap)", &s, XDP_DROP, COUNTER(drop_bad_opcode));
	s.opcode = 0x63;
	check_roce("opcode 0x63 (UD, not SEND ONLY)", &s, XDP_DROP, COUNTER(drop_bad_opcode));
}

static void test_truncation(void)
{
	struct roce_spec s = send_only();
	struct frame f;
	size_t ip_end;

	s.opcode = XR_OP_RC_WRITE_FIRST;
	s.payload = 64;
	build_roce(&f, &s);
	ip_end = f.udp;

	/* Before the UDP destination port nothing says RoCE: the kernel decides. */
	run_case("WRITE FIRST cut after Ethernet", &f, f.l3, XDP_PASS, COUNTER(passed_non_roce),
		 true);
	run_case("WRITE FIRST cut inside IPv4", &f, f.l3 + 10, XDP_PASS, COUNTER(passed_non_roce),
		 true);
	run_case("WRITE FIRST cut after IPv4", &f, ip_end, XDP_PASS, COUNTER(passed_non_roce),
		 true);
	run_case("WRITE FIRST cut inside UDP (after ports)", &f, f.udp + 4, XDP_DROP,
		 COUNTER(drop_truncated), true);
	run_case("WRITE FIRST cut after UDP", &f, f.bth, XDP_DROP, COUNTER(drop_truncated), true);
	run_case("WRITE FIRST cut inside BTH", &f, f.bth + 6, XDP_DROP, COUNTER(drop_truncated),
		 true);
	run_case("WRITE FIRST cut after BTH (no RETH)", &f, f.bth + XR_BTH_SIZE, XDP_DROP,
		 COUNTER(drop_truncated), true);
	run_case("WRITE FIRST cut inside RETH", &f, f.bth + XR_BTH_SIZE + 8, XDP_DROP,
		 COUNTER(drop_truncated), true);
	/* Headers complete, payload cut: the UDP length no longer fits the frame. */
	run_case("WRITE FIRST cut inside payload", &f, f.bth + XR_BTH_SIZE + XR_RETH_SIZE + 10,
		 XDP_DROP, COUNTER(drop_bad_length), true);

	s = send_only();
	s.ipv6 = true;
	build_roce(&f, &s);
	run_case("ipv6 SEND ONLY cut inside BTH", &f, f.bth + 4, XDP_DROP, COUNTER(drop_truncated),
		 true);
	s.opcode = XR_OP_RC_CMP_SWAP;
	build_roce(&f, &s);
	run_case("ipv6 CMP SWAP cut inside AtomicETH", &f, f.bth + XR_BTH_SIZE + 20, XDP_DROP,
		 COUNTER(drop_truncated), true);
}

static void test_bad_headers(void)
{
	struct roce_spec s = send_only();
	struct frame f;

	build_roce(&f, &s);
	f.data[f.bth + 1] |= 1;
	check("BTH TVer 1", &f, XDP_DROP, COUNTER(drop_bad_tver));

	/* UDP says more than the frame holds (IP agrees with UDP). */
	build_roce(&f, &s);
	put16(f.data + f.udp + 4, f.len - f.udp + 8);
	put16(f.data + f.l3 + 2, f.len - f.l3 + 8);
	check("UDP length beyond the frame", &f, XDP_DROP, COUNTER(drop_bad_length));

	build_roce(&f, &s);
	put16(f.data + f.udp + 4, f.len - f.udp - 4);
	check("UDP length disagrees with IPv4 length", &f, XDP_DROP, COUNTER(drop_bad_length));

	build_roce(&f, &s);
	put16(f.data + f.udp + 4, 4);
	put16(f.data + f.l3 + 2, 20 + 4);
	check("UDP length 4 (below its own header)", &f, XDP_DROP, COUNTER(drop_bad_length));

	/* Consistent lengths, but too short for BTH + ICRC: the rest is trailer. */
	build_roce(&f, &s);
	put16(f.data + f.udp + 4, 8 + XR_BTH_SIZE);
	put16(f.data + f.l3 + 2, 20 + 8 + XR_BTH_SIZE);
	check("UDP payload without room for the ICRC", &f, XDP_DROP, COUNTER(drop_bad_length));

	/* PadCnt 3 on an empty SEND: 12 + 3 + 4 bytes claimed, 12 + 4 present. */
	s.payload = 0;
	build_roce(&f, &s);
	f.data[f.bth + 1] |= 3 << XR_BTH_PAD_SHIFT;
	check("PadCnt larger than the payload", &f, XDP_DROP, COUNTER(drop_bad_length));

	s = send_only();
	s.ipv6 = true;
	build_roce(&f, &s);
	put16(f.data + f.l3 + 4, f.len - f.udp + 2);
	check("UDP length disagrees with IPv6 payload length", &f, XDP_DROP,
	      COUNTER(drop_bad_length));
}

static void test_queue_pairs(void)
{
	struct roce_spec s = send_only();

	s.qpn = QPN_NEVER_OPENED;
	check_roce("QP slot never opened", &s, XDP_DROP, COUNTER(drop_unknown_qp));
	/* The slot is the QPN's low bits: other QPNs share it, and are not its QP. */
	s.qpn = QPN_ACTIVE + XR_MAX_QP;
	check_roce("QPN sharing the active QP's slot (+1024)", &s, XDP_DROP,
		   COUNTER(drop_unknown_qp));
	s.qpn = QPN_ACTIVE ^ 0x800000;
	check_roce("QPN sharing the active QP's slot (top bit)", &s, XDP_DROP,
		   COUNTER(drop_unknown_qp));
	s.qpn = xr_qpn_slot(QPN_ACTIVE);
	check_roce("QPN equal to the active QP's slot", &s, XDP_DROP, COUNTER(drop_unknown_qp));
	s.qpn = XR_GSI_QPN;
	check_roce("GSI QPN 1, no QP1 published", &s, XDP_DROP, COUNTER(drop_unknown_qp));
	/* QP1 has a slot of its own, which no QPN sharing slot 1 reaches. */
	{
		struct xr_qp_entry gsi = entry_for(XR_GSI_QPN, XR_XDP_QP_ACTIVE, XR_QPT_UD);
		struct roce_spec mad = {
		    .opcode = XR_OP_UD_SEND_ONLY, .qpn = XR_GSI_QPN, .payload = 256};
		struct frame f;

		gsi.qkey = 0x80010000u;
		xt_put_entry(XR_GSI_QPN, &gsi);
		build_roce(&f, &mad);
		put32(f.data + f.bth + XR_BTH_SIZE, 0x80010000u);
		check("MAD to QP1 with the GSI Q_Key", &f, XDP_DROP, COUNTER(drop_no_socket));
		put32(f.data + f.bth + XR_BTH_SIZE, UD_QKEY);
		check("datagram to QP1 with another Q_Key", &f, XDP_DROP, COUNTER(drop_bad_qkey));
		mad.qpn = XR_GSI_QPN + XR_MAX_QP;
		check_roce("QPN 1 + 1024, sharing slot 1", &mad, XDP_DROP,
			   COUNTER(drop_unknown_qp));
		gsi.state = XR_XDP_QP_NONE;
		xt_put_entry(XR_GSI_QPN, &gsi);
	}
	{
		static const uint8_t group_mac[ETH_ALEN] = {0x01, 0x00, 0x5e, 0, 0, 2};
		struct frame f;

		s.opcode = XR_OP_UD_SEND_ONLY;
		s.qpn = XR_MULTICAST_QPN;
		build_roce(&f, &s);
		memcpy(f.data, group_mac, ETH_ALEN);
		check("multicast QPN 0xffffff, no group attached", &f, XDP_DROP,
		      COUNTER(drop_mcast_unjoined));
	}
	s = send_only();
	s.qpn = QPN_CLOSED;
	check_roce("closed QP", &s, XDP_DROP, COUNTER(drop_qp_state));
	/* A UD QP takes datagrams with its own Q_Key only. */
	{
		struct xr_qp_entry ud = entry_for(QPN_UD, XR_XDP_QP_ACTIVE, XR_QPT_UD);
		struct frame f;

		ud.qkey = UD_QKEY;
		xt_put_entry(QPN_UD, &ud);
		s = (struct roce_spec){.opcode = XR_OP_UD_SEND_ONLY, .qpn = QPN_UD, .payload = 8};
		build_roce(&f, &s);
		check("UD datagram, Q_Key 0, QP's is 0x11111111", &f, XDP_DROP,
		      COUNTER(drop_bad_qkey));
		put32(f.data + f.bth + XR_BTH_SIZE, UD_QKEY);
		check("UD datagram with the QP's Q_Key", &f, XDP_DROP, COUNTER(drop_no_socket));
		s.opcode = XR_OP_UD_SEND_ONLY_IMM;
		build_roce(&f, &s);
		put32(f.data + f.bth + XR_BTH_SIZE, UD_QKEY + 1);
		check("UD datagram with immediate, another Q_Key", &f, XDP_DROP,
		      COUNTER(drop_bad_qkey));
	}
	/* FECN/BECN and reserved bits above the 24-bit QPN do not change the QP. */
	s.qpn = 0xc0000000u | QPN_ACTIVE;
	check_roce("active QP with FECN and BECN set", &s, XDP_DROP, COUNTER(drop_no_socket));
}

/* Every frame names a P_Key; xroce is in the default partition only. */
static void test_pkey(void)
{
	static const uint16_t pkeys[] = {0x7fff, 0x8001, 0x0000, 0xfffe};
	struct roce_spec s = send_only();
	char name[64];
	struct frame f;
	size_t i;

	for (i = 0; i < sizeof(pkeys) / sizeof(pkeys[0]); i++) {
		build_roce(&f, &s);
		put16(f.data + f.bth + 2, pkeys[i]);
		snprintf(name, sizeof(name), "SEND ONLY with P_Key 0x%04x", pkeys[i]);
		check(name, &f, XDP_DROP, COUNTER(drop_bad_pkey));
	}
	s.ipv6 = true;
	build_roce(&f, &s);
	put16(f.data + f.bth + 2, 0x7fff);
	check("ipv6 SEND ONLY with P_Key 0x7fff", &f, XDP_DROP, COUNTER(drop_bad_pkey));
	s = (struct roce_spec){.opcode = XR_OP_RC_ACK, .qpn = QPN_ACTIVE};
	build_roce(&f, &s);
	put16(f.data + f.bth + 2, 0x7fff);
	check("ACK with P_Key 0x7fff", &f, XDP_DROP, COUNTER(drop_bad_pkey));
	s = (struct roce_spec){.opcode = XR_OP_UD_SEND_ONLY, .qpn = XR_MULTICAST_QPN, .payload = 8};
	build_roce(&f, &s);
	put16(f.data + f.bth + 2, 0x7fff);
	check("multicast datagram with P_Key 0x7fff", &f, XDP_DROP, COUNTER(drop_bad_pkey));
}

/* Where a frame's source and destination addresses are, for IPv4 and IPv6. */
static uint8_t *src_ip_of(struct frame *f)
{
	return f->data + f->l3 + (frame_is_ipv6(f) ? 8 : 12);
}

static uint8_t *dst_ip_of(struct frame *f)
{
	return f->data + f->l3 + (frame_is_ipv6(f) ? 24 : 16);
}

/* After changing an IPv4 address: the kernel would drop a frame with a bad checksum. */
static void refresh_ip_checksum(struct frame *f)
{
	if (frame_is_ipv6(f))
		return;
	put16(f->data + f->l3 + 10, 0);
	put16(f->data + f->l3 + 10, ipv4_checksum(f->data + f->l3, 20));
}

static void build_to(struct frame *f, uint8_t opcode, uint32_t qpn, bool ipv6)
{
	uint32_t payload = xr_opinfo[opcode].flags & XR_OPF_PAYLOAD ? 8 : 0;

	build_roce(
	    f, &(struct roce_spec){.ipv6 = ipv6, .opcode = opcode, .qpn = qpn, .payload = payload});
	if (opcode == XR_OP_UD_SEND_ONLY)
		put32(f->data + f->bth + XR_BTH_SIZE, UD_QKEY);
}

/* A frame to qpn with one of its addresses changed to another host's. */
static void check_changed(const char *name, uint8_t opcode, uint32_t qpn, bool ipv6,
			  uint8_t *(*where)(struct frame *), size_t counter)
{
	struct frame f;

	build_to(&f, opcode, qpn, ipv6);
	where(&f)[ipv6 ? 15 : 3] ^= 0x40;
	refresh_ip_checksum(&f);
	check(name, &f, XDP_DROP, counter);
}

static uint8_t *dst_mac_of(struct frame *f)
{
	return f->data;
}

static void check_dst_mac(const char *name, uint8_t opcode, uint32_t qpn, bool ipv6,
			  const uint8_t mac[ETH_ALEN], size_t counter)
{
	struct frame f;

	build_to(&f, opcode, qpn, ipv6);
	memcpy(dst_mac_of(&f), mac, ETH_ALEN);
	check(name, &f, XDP_DROP, counter);
}

/*
 * Address binding: a frame for a QP must be to this interface's MAC (a group
 * MAC only for UD), and a connected QP's from its peer's IP to its own.
 * drop_no_socket is the verdict of a frame that got through to steering.
 */
static void test_binding(void)
{
	static const uint8_t mcast_mac[ETH_ALEN] = {0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
	static const uint8_t mcast6_mac[ETH_ALEN] = {0x33, 0x33, 0, 0, 0, 0x01};
	static const uint8_t broadcast[ETH_ALEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	struct xr_qp_entry ud = entry_for(QPN_UD, XR_XDP_QP_ACTIVE, XR_QPT_UD);
	struct frame f;

	ud.qkey = UD_QKEY;
	xt_put_entry(QPN_UD, &ud);
	set_connected_qp(QPN_RC_V4, XR_QPT_RC, false);
	set_connected_qp(QPN_RC_V6, XR_QPT_RC, true);
	set_connected_qp(QPN_UC_V4, XR_QPT_UC, false);

	build_to(&f, XR_OP_RC_SEND_ONLY, QPN_RC_V4, false);
	check("RC (path set) SEND from its peer", &f, XDP_DROP, COUNTER(drop_no_socket));
	build_to(&f, XR_OP_RC_SEND_ONLY, QPN_RC_V6, true);
	check("ipv6 RC (path set) SEND from its peer", &f, XDP_DROP, COUNTER(drop_no_socket));
	build_to(&f, XR_OP_UC_SEND_ONLY, QPN_UC_V4, false);
	check("UC (path set) SEND from its peer", &f, XDP_DROP, COUNTER(drop_no_socket));

	check_changed("RC SEND from a foreign IPv4 source", XR_OP_RC_SEND_ONLY, QPN_RC_V4, false,
		      src_ip_of, COUNTER(drop_bad_src));
	check_changed("RC ACK from a foreign IPv4 source", XR_OP_RC_ACK, QPN_RC_V4, false,
		      src_ip_of, COUNTER(drop_bad_src));
	check_changed("ipv6 RC SEND from a foreign IPv6 source", XR_OP_RC_SEND_ONLY, QPN_RC_V6,
		      true, src_ip_of, COUNTER(drop_bad_src));
	check_changed("UC SEND from a foreign IPv4 source", XR_OP_UC_SEND_ONLY, QPN_UC_V4, false,
		      src_ip_of, COUNTER(drop_bad_src));
	check_changed("RC SEND to another IPv4 address", XR_OP_RC_SEND_ONLY, QPN_RC_V4, false,
		      dst_ip_of, COUNTER(drop_bad_dst));
	check_changed("ipv6 RC SEND to another IPv6 address", XR_OP_RC_SEND_ONLY, QPN_RC_V6, true,
		      dst_ip_of, COUNTER(drop_bad_dst));
	/* The right host, the wrong family: an IPv4-mapped path takes no IPv6 frame. */
	build_to(&f, XR_OP_RC_SEND_ONLY, QPN_RC_V4, true);
	check("ipv6 SEND to an RC QP with an IPv4 path", &f, XDP_DROP, COUNTER(drop_bad_dst));
	build_to(&f, XR_OP_RC_SEND_ONLY, QPN_RC_V6, false);
	check("ipv4 SEND to an RC QP with an IPv6 path", &f, XDP_DROP, COUNTER(drop_bad_dst));

	check_dst_mac("RC SEND to another host's MAC", XR_OP_RC_SEND_ONLY, QPN_RC_V4, false,
		      other_host_mac, COUNTER(drop_bad_dst));
	check_dst_mac("RC (no path yet) SEND to another host's MAC", XR_OP_RC_SEND_ONLY, QPN_ACTIVE,
		      false, other_host_mac, COUNTER(drop_bad_dst));
	check_dst_mac("UD datagram to another host's MAC", XR_OP_UD_SEND_ONLY, QPN_UD, false,
		      other_host_mac, COUNTER(drop_bad_dst));
	check_dst_mac("RC SEND to a multicast MAC", XR_OP_RC_SEND_ONLY, QPN_RC_V4, false, mcast_mac,
		      COUNTER(drop_bad_dst));
	check_dst_mac("RC SEND to the broadcast MAC", XR_OP_RC_SEND_ONLY, QPN_RC_V4, false,
		      broadcast, COUNTER(drop_bad_dst));
	check_dst_mac("UC SEND to a multicast MAC", XR_OP_UC_SEND_ONLY, QPN_UC_V4, false, mcast_mac,
		      COUNTER(drop_bad_dst));
	check_dst_mac("UD datagram to a multicast MAC", XR_OP_UD_SEND_ONLY, QPN_UD, false,
		      mcast_mac, COUNTER(drop_no_socket));
	check_dst_mac("ipv6 UD datagram to a multicast MAC", XR_OP_UD_SEND_ONLY, QPN_UD, true,
		      mcast6_mac, COUNTER(drop_no_socket));
	check_dst_mac("multicast QPN datagram to a unicast MAC", XR_OP_UD_SEND_ONLY,
		      XR_MULTICAST_QPN, false, our_mac, COUNTER(drop_bad_dst));

	/* UD takes datagrams from anyone, to any of this host's addresses. */
	build_to(&f, XR_OP_UD_SEND_ONLY, QPN_UD, false);
	memset(src_ip_of(&f), 0x42, 4);
	memset(dst_ip_of(&f), 0x43, 4);
	memcpy(f.data + ETH_ALEN, other_host_mac, ETH_ALEN);
	refresh_ip_checksum(&f);
	check("UD datagram from any IPv4 source and MAC", &f, XDP_DROP, COUNTER(drop_no_socket));
	build_to(&f, XR_OP_UD_SEND_ONLY, QPN_UD, true);
	memset(src_ip_of(&f), 0x42, 16);
	check("UD datagram from any IPv6 source", &f, XDP_DROP, COUNTER(drop_no_socket));
	/* Before RTR a connected QP is CLOSED; one without a path binds only its MAC. */
	build_to(&f, XR_OP_RC_SEND_ONLY, QPN_ACTIVE, false);
	memset(src_ip_of(&f), 0x42, 4);
	refresh_ip_checksum(&f);
	check("RC without a path: SEND from any source", &f, XDP_DROP, COUNTER(drop_no_socket));
}

static void test_not_roce(void)
{
	struct roce_spec s = send_only();
	struct frame f;
	size_t off;

	s.dport = 4792;
	check_roce("ipv4 UDP port 4792", &s, XDP_PASS, COUNTER(passed_non_roce));
	s.ipv6 = true;
	s.dport = 53;
	check_roce("ipv6 UDP port 53", &s, XDP_PASS, COUNTER(passed_non_roce));

	memset(&f, 0, sizeof(f));
	off = put_ethernet(&f, ETH_P_ARP, false);
	put16(f.data + off, 1); /* Ethernet */
	put16(f.data + off + 2, ETH_P_IP);
	f.data[off + 4] = ETH_ALEN;
	f.data[off + 5] = 4;
	put16(f.data + off + 6, 1); /* request */
	f.len = off + 28;
	check("ARP request", &f, XDP_PASS, COUNTER(passed_non_roce));

	memset(&f, 0, sizeof(f));
	off = put_ethernet(&f, ETH_P_IP, false);
	off = put_ipv4(&f, off, IPPROTO_ICMP, 8, false);
	f.data[off] = 8; /* echo request */
	f.len = off + 8;
	check("ICMP echo request", &f, XDP_PASS, COUNTER(passed_non_roce));

	/* A later fragment of a datagram to 4791 carries no UDP header. */
	build_roce(&f, &(struct roce_spec){.opcode = XR_OP_RC_SEND_ONLY, .qpn = QPN_ACTIVE});
	put16(f.data + f.l3 + 6, 0x0010);
	check("ipv4 fragment (offset 128) to port 4791", &f, XDP_PASS, COUNTER(passed_non_roce));

	/* RoCEv2 sends no IPv6 extension headers; such frames are the kernel's. */
	memset(&f, 0, sizeof(f));
	off = put_ethernet(&f, ETH_P_IPV6, false);
	off = put_ipv6(&f, off, 0 /* hop-by-hop */, 8 + 8 + XR_BTH_SIZE + XR_ICRC_SIZE);
	f.data[off] = IPPROTO_UDP;
	off = put_udp(&f, off + 8, XR_ROCEV2_UDP_PORT, XR_BTH_SIZE + XR_ICRC_SIZE);
	f.len = off + XR_BTH_SIZE + XR_ICRC_SIZE;
	check("ipv6 hop-by-hop header then UDP 4791", &f, XDP_PASS, COUNTER(passed_non_roce));
}

/*
 * A datagram to multicast QPN 0xffffff whose destination address is group (a
 * GID), to the group's MAC (RFC 1112, RFC 2464).
 */
static void build_mcast(struct frame *f, uint8_t opcode, bool ipv6, const uint8_t group[16])
{
	build_roce(f, &(struct roce_spec){
			  .ipv6 = ipv6, .opcode = opcode, .qpn = XR_MULTICAST_QPN, .payload = 8});
	if (ipv6) {
		f->data[0] = f->data[1] = 0x33;
		memcpy(f->data + 2, group + 12, 4);
		memcpy(f->data + f->l3 + 24, group, 16);
	} else {
		f->data[0] = 0x01;
		f->data[1] = 0x00;
		f->data[2] = 0x5e;
		f->data[3] = group[13] & 0x7f;
		f->data[4] = group[14];
		f->data[5] = group[15];
		memcpy(f->data + f->l3 + 16, group + 12, 4);
		put16(f->data + f->l3 + 10, 0);
		put16(f->data + f->l3 + 10, ipv4_checksum(f->data + f->l3, 20));
	}
}

static void set_group(const uint8_t gid[16], bool joined)
{
	int fd = bpf_map__fd(xt.skel->maps.mcast_groups);
	struct xr_mcast_entry entry = {.qps_attached = 1};
	struct xr_mcast_key key;

	memcpy(key.gid, gid, 16);
	if (joined ? bpf_map_update_elem(fd, &key, &entry, BPF_ANY) : bpf_map_delete_elem(fd, &key))
		printf("test fixture: mcast_groups update: %s\n", strerror(errno));
}

static __u64 group_rx_frames(const uint8_t gid[16])
{
	int fd = bpf_map__fd(xt.skel->maps.mcast_groups);
	struct xr_mcast_entry entry = {0};
	struct xr_mcast_key key;

	memcpy(key.gid, gid, 16);
	bpf_map_lookup_elem(fd, &key, &entry);
	return entry.rx_frames;
}

/*
 * Multicast datagrams pass only for groups in the group table, over IPv4
 * (the key IPv4-mapped) and IPv6, and only as UD; each counted in its group.
 */
static void mcast_cases(void)
{
	const uint8_t v4[16] = {[10] = 0xff, [11] = 0xff, 239, 1, 2, 3};
	const uint8_t v4_other[16] = {[10] = 0xff, [11] = 0xff, 239, 1, 2, 4};
	const uint8_t v6[16] = {0xff, 0x12, [15] = 1};
	struct frame f;
	__u64 before;

	build_mcast(&f, XR_OP_UD_SEND_ONLY, false, v4);
	check("ipv4 datagram to 239.1.2.3, not joined", &f, XDP_DROP, COUNTER(drop_mcast_unjoined));
	set_group(v4, true);
	before = group_rx_frames(v4);
	check("ipv4 datagram to 239.1.2.3, joined", &f, XDP_REDIRECT, COUNTER(redirected));
	build_mcast(&f, XR_OP_UD_SEND_ONLY_IMM, false, v4);
	check("ipv4 datagram with immediate to 239.1.2.3, joined", &f, XDP_REDIRECT,
	      COUNTER(redirected));
	if (group_rx_frames(v4) - before != 2) {
		failures++;
		printf("FAIL %-52s moved by %llu, expected 2\n",
		       "group rx_frames after 2 redirects",
		       (unsigned long long)(group_rx_frames(v4) - before));
	} else {
		printf("ok   %-52s +2\n", "group rx_frames after 2 redirects");
	}
	build_mcast(&f, XR_OP_UD_SEND_ONLY, false, v4_other);
	check("ipv4 datagram to 239.1.2.4, another group", &f, XDP_DROP,
	      COUNTER(drop_mcast_unjoined));
	build_mcast(&f, XR_OP_RC_SEND_ONLY, false, v4);
	check("RC SEND to QPN 0xffffff of a joined group", &f, XDP_DROP, COUNTER(drop_unknown_qp));
	build_mcast(&f, XR_OP_UC_SEND_ONLY, false, v4);
	check("UC SEND to QPN 0xffffff of a joined group", &f, XDP_DROP, COUNTER(drop_unknown_qp));
	build_mcast(&f, XR_OP_UD_SEND_ONLY, true, v6);
	check("ipv6 datagram to ff12::1, not joined", &f, XDP_DROP, COUNTER(drop_mcast_unjoined));
	set_group(v6, true);
	check("ipv6 datagram to ff12::1, joined", &f, XDP_REDIRECT, COUNTER(redirected));
	set_group(v6, false);
	check("ipv6 datagram to ff12::1, left again", &f, XDP_DROP, COUNTER(drop_mcast_unjoined));
	set_group(v4, false);
	build_mcast(&f, XR_OP_UD_SEND_ONLY, false, v4);
	check("ipv4 datagram to 239.1.2.3, left again", &f, XDP_DROP, COUNTER(drop_mcast_unjoined));
}

static void redirect_cases(void)
{
	struct roce_spec s = send_only();
	__u64 rx_before = qp_rx_frames(QPN_ACTIVE);

	mcast_cases();

	check_roce("ipv4 SEND ONLY, active QP, socket on queue 0", &s, XDP_REDIRECT,
		   COUNTER(redirected));
	s.ipv6 = true;
	check_roce("ipv6 SEND ONLY, active QP, socket on queue 0", &s, XDP_REDIRECT,
		   COUNTER(redirected));
	if (qp_rx_frames(QPN_ACTIVE) - rx_before != 2) {
		failures++;
		printf("FAIL %-52s moved by %llu, expected 2\n", "QP rx_frames after 2 redirects",
		       (unsigned long long)(qp_rx_frames(QPN_ACTIVE) - rx_before));
	} else {
		printf("ok   %-52s +2\n", "QP rx_frames after 2 redirects");
	}
	s = send_only();
	s.qpn = QPN_CLOSED;
	check_roce("closed QP, socket on queue 0", &s, XDP_DROP, COUNTER(drop_qp_state));
}

static void test_redirect_to_socket(void)
{
	int err = xt_with_socket_on_lo(redirect_cases);

	if (err) {
		failures++;
		printf("FAIL %-52s %s\n", "AF_XDP socket on lo for the redirect case",
		       strerror(-err));
	}
}

int main(void)
{
	if (xt_load("test_xdp_prog"))
		return 1;
	set_qp_state(QPN_ACTIVE, XR_XDP_QP_ACTIVE);
	set_qp_state(QPN_CLOSED, XR_XDP_QP_CLOSED);

	test_valid_frames();
	test_all_opcodes();
	test_truncation();
	test_bad_headers();
	test_queue_pairs();
	test_pkey();
	test_binding();
	test_not_roce();
	test_redirect_to_socket();
	return xt_finish(failures);
}
