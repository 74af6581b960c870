// SPDX-License-Identifier: MIT
/*
 * The XDP program and the engine's parser must accept exactly the same
 * frames: whatever XDP steers to the engine as well-formed RoCEv2 the engine
 * parses (else it is dropped after costing a trip to userspace, or worse,
 * one of them trusts a length the other never checked), and what XDP passes
 * to the kernel as not RoCE the parser calls not RoCE.
 *
 * Runs the real program (BPF_PROG_TEST_RUN, no attach) and xr_pkt_parse on
 * the same frames: named cases for the rules they used to disagree on, the
 * fuzz corpus (tests/fuzz/corpus/fuzz_parser, frames of the rxe captures),
 * and deterministic mutations of all of them. XDP's verdict is read from the
 * counter that moved: passed_non_roce is "not RoCE", drop_truncated,
 * drop_bad_tver, drop_bad_opcode and drop_bad_length are "malformed",
 * anything else (steered, or dropped for a QP-level reason) "well-formed".
 * The destination QP exists in qp_table, so well-formed frames get past the
 * QP lookup too. Needs root (loading BPF programs).
 */
#include <dirent.h>

#include "../fuzz/xdp_verdict.h"
#include "xroce/wire.h"

#define CORPUS_DIR "tests/fuzz/corpus/fuzz_parser"
#define MAX_BASES 128
#define MUTATIONS 20000
#define QPN (XR_QPN_BASE + 3)
#define SEED 0x600dcafe1234ull

struct frame {
	uint8_t data[XV_FRAME_MAX];
	uint32_t len;
};

static struct frame bases[MAX_BASES];
static int nbases, failures, disagreements;

/*
 * Both verdicts of a frame; the first disagreement of the run is printed
 * whole. False when the test run itself failed.
 */
static bool judge(const char *name, const struct frame *f, int *xdp, enum xv_verdict *engine)
{
	enum xr_parse_result r;
	const char *counter;

	*engine = xv_parser_verdict(f->data, f->len, &r);
	*xdp = xv_xdp_verdict(f->data, f->len, &counter);
	if (*xdp < 0) {
		failures++;
		return false;
	}
	if (*xdp != (int)*engine && disagreements++ == 0) {
		printf("FIRST DISAGREEMENT (%s): XDP %s (%s), parser %s (%s); %u bytes:\n", name,
		       xv_verdict_names[*xdp], counter, xv_verdict_names[*engine],
		       xr_parse_result_str(r), f->len);
		xv_print_hex(f->data, f->len);
	}
	return true;
}

/* How many frames of each verdict both gave: the mutations must reach all three. */
static int agreed_on[XV_NVERDICTS];

static bool agree(const char *name, const struct frame *f)
{
	enum xv_verdict engine;
	int xdp;

	if (!judge(name, f, &xdp, &engine))
		return false;
	if (xdp == (int)engine) {
		agreed_on[engine]++;
		return true;
	}
	failures++;
	return false;
}

/* A named case: both must agree, on the verdict expected. */
static void check_case(const char *name, const struct frame *f, enum xv_verdict expect)
{
	enum xv_verdict engine;
	int xdp;

	if (!judge(name, f, &xdp, &engine))
		return;
	if (xdp == (int)engine && engine == expect) {
		printf("ok   %-56s %s\n", name, xv_verdict_names[expect]);
		return;
	}
	failures++;
	printf("FAIL %-56s XDP %s, parser %s, expected %s\n", name, xv_verdict_names[xdp],
	       xv_verdict_names[engine], xv_verdict_names[expect]);
}

/* ---- building the named cases ------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static struct frame build(uint8_t opcode, bool ipv6, uint32_t payload_len)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x01}, smac[6] = {0x02, 0, 0, 0, 0, 2};
	struct xr_path path = {.udp_sport = 0xc123};
	struct xr_bth_fields bth = {.opcode = opcode, .dqpn = QPN, .psn = 7};
	struct xr_pkt_out out;
	struct frame f = {0};

	memcpy(path.dmac, dmac, 6);
	memcpy(path.smac, smac, 6);
	if (ipv6) {
		path.sgid.raw[0] = path.dgid.raw[0] = 0xfd;
		path.sgid.raw[15] = 2;
		path.dgid.raw[15] = 1;
	} else {
		path.sgid = (union xr_gid){.raw = {[10] = 0xff, [11] = 0xff, 10, 0, 0, 2}};
		path.dgid = (union xr_gid){.raw = {[10] = 0xff, [11] = 0xff, 10, 0, 0, 1}};
	}
	if (xr_pkt_build(f.data, sizeof(f.data), &path, &bth, payload_len, 1, &out)) {
		fprintf(stderr, "building opcode 0x%02x: cannot\n", opcode);
		exit(1);
	}
	memset(out.payload, 0x5c, payload_len);
	xr_pkt_seal(&out);
	f.len = out.frame_len;
	return f;
}

/* Inserts a VLAN tag of tpid after the MAC addresses. */
static struct frame tagged(struct frame f, uint16_t tpid)
{
	memmove(f.data + 16, f.data + 12, f.len - 12);
	put16(f.data + 12, tpid);
	put16(f.data + 14, 42);
	f.len += 4;
	return f;
}

/* Sets PadCnt to pad, adding as many bytes so that every length stays right. */
static struct frame padded(struct frame f, uint8_t pad)
{
	const uint32_t l3 = XR_ETH_HLEN, udp = l3 + XR_IPV4_HLEN, bth = udp + XR_UDP_HLEN;

	memmove(f.data + f.len - XR_ICRC_SIZE + pad, f.data + f.len - XR_ICRC_SIZE, XR_ICRC_SIZE);
	memset(f.data + f.len - XR_ICRC_SIZE, 0, pad);
	f.len += pad;
	put16(f.data + l3 + 2, (uint16_t)(get16(f.data + l3 + 2) + pad));
	put16(f.data + udp + 4, (uint16_t)(get16(f.data + udp + 4) + pad));
	f.data[bth + 1] = (uint8_t)((f.data[bth + 1] & ~XR_BTH_PAD_MASK) | pad << XR_BTH_PAD_SHIFT);
	return f;
}

/* Appends n bytes inside the UDP datagram (before the ICRC), lengths kept right. */
static struct frame grown(struct frame f, bool ipv6, uint32_t n)
{
	uint32_t l3 = XR_ETH_HLEN, udp = l3 + (ipv6 ? XR_IPV6_HLEN : XR_IPV4_HLEN);

	memmove(f.data + f.len - XR_ICRC_SIZE + n, f.data + f.len - XR_ICRC_SIZE, XR_ICRC_SIZE);
	memset(f.data + f.len - XR_ICRC_SIZE, 0x77, n);
	f.len += n;
	put16(f.data + l3 + (ipv6 ? 4 : 2), (uint16_t)(get16(f.data + l3 + (ipv6 ? 4 : 2)) + n));
	put16(f.data + udp + 4, (uint16_t)(get16(f.data + udp + 4) + n));
	return f;
}

static void named_cases(void)
{
	struct frame f;

	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	check_case("ipv4 SEND ONLY", &f, XV_WELL_FORMED);
	f = build(XR_OP_RC_SEND_ONLY, true, 16);
	check_case("ipv6 SEND ONLY", &f, XV_WELL_FORMED);
	f = tagged(build(XR_OP_RC_SEND_ONLY, false, 16), ETH_P_8021Q);
	check_case("802.1Q-tagged SEND ONLY", &f, XV_WELL_FORMED);
	f = tagged(build(XR_OP_RC_SEND_ONLY, false, 16), ETH_P_8021AD);
	check_case("802.1ad-tagged SEND ONLY", &f, XV_WELL_FORMED);
	f = tagged(tagged(build(XR_OP_RC_SEND_ONLY, false, 16), ETH_P_8021Q), ETH_P_8021AD);
	check_case("two VLAN tags (QinQ): only one is looked into", &f, XV_NOT_ROCE);

	f = build(XR_OP_RC_SEND_ONLY, false, 13);
	check_case("SEND ONLY of 13 bytes, PadCnt 3", &f, XV_WELL_FORMED);
	f = padded(build(XR_OP_RC_SEND_FIRST, false, 16), 1);
	check_case("SEND FIRST with PadCnt 1", &f, XV_MALFORMED);
	f = padded(build(XR_OP_RC_SEND_MIDDLE, false, 16), 2);
	check_case("SEND MIDDLE with PadCnt 2", &f, XV_MALFORMED);
	f = padded(build(XR_OP_RC_READ_RESPONSE_FIRST, false, 16), 3);
	check_case("READ RESPONSE FIRST with PadCnt 3", &f, XV_MALFORMED);
	f = padded(build(XR_OP_RC_SEND_LAST, false, 16), 3);
	check_case("SEND LAST with PadCnt 3", &f, XV_WELL_FORMED);
	f = grown(build(XR_OP_RC_ACK, false, 0), false, 4);
	check_case("ACK with 4 bytes of payload", &f, XV_MALFORMED);
	f = grown(build(XR_OP_RC_READ_REQUEST, true, 0), true, 8);
	check_case("ipv6 READ REQUEST with 8 bytes of payload", &f, XV_MALFORMED);

	/* The IP and UDP lengths: the datagram must be exactly the IP payload. */
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	put16(f.data + XR_ETH_HLEN + 2, (uint16_t)(get16(f.data + XR_ETH_HLEN + 2) + 4));
	f.len += 4;
	check_case("ipv4 total length 4 beyond the UDP length", &f, XV_MALFORMED);
	f = build(XR_OP_RC_SEND_ONLY, true, 16);
	put16(f.data + XR_ETH_HLEN + 4, (uint16_t)(get16(f.data + XR_ETH_HLEN + 4) + 4));
	f.len += 4;
	check_case("ipv6 payload length 4 beyond the UDP length", &f, XV_MALFORMED);
	f = build(XR_OP_RC_SEND_ONLY, true, 16);
	put16(f.data + XR_ETH_HLEN + 4, (uint16_t)(get16(f.data + XR_ETH_HLEN + 4) - 4));
	check_case("ipv6 payload length 4 short of the UDP length", &f, XV_MALFORMED);
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	put16(f.data + XR_ETH_HLEN + XR_IPV4_HLEN + 4,
	      (uint16_t)(get16(f.data + XR_ETH_HLEN + XR_IPV4_HLEN + 4) - 4));
	check_case("UDP length 4 short of the ipv4 payload", &f, XV_MALFORMED);
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	f.len += 20; /* Ethernet padding */
	check_case("SEND ONLY with 20 bytes of Ethernet padding", &f, XV_WELL_FORMED);
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	f.len -= 2;
	check_case("SEND ONLY cut inside its ICRC", &f, XV_MALFORMED);

	/* Not IP as the kernel would take it: for the kernel to decide. */
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	put16(f.data + XR_ETH_HLEN + 2, 12);
	check_case("ipv4 total length below the header's", &f, XV_NOT_ROCE);
	f = build(XR_OP_RC_SEND_ONLY, true, 16);
	f.data[XR_ETH_HLEN] = 0x50;
	check_case("ipv6 ethertype, IP version 5", &f, XV_NOT_ROCE);
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	f.data[XR_ETH_HLEN] = 0x65;
	check_case("ipv4 ethertype, IP version 6", &f, XV_NOT_ROCE);
	/* The ICRC covers the IP header but its checksum: neither checks that. */
	f = build(XR_OP_RC_SEND_ONLY, false, 16);
	f.data[XR_ETH_HLEN + 10] ^= 0xff;
	check_case("ipv4 header checksum wrong", &f, XV_WELL_FORMED);
}

/* ---- the corpus and its mutations ---------------------------------------- */

/* Loads every corpus file; each one's destination QPN becomes the QP that exists. */
static int load_corpus(void)
{
	DIR *dir = opendir(CORPUS_DIR);
	struct dirent *de;

	if (!dir) {
		fprintf(stderr, "%s: %s (run from the repository root)\n", CORPUS_DIR,
			strerror(errno));
		return -1;
	}
	while ((de = readdir(dir)) && nbases < MAX_BASES) {
		char path[512];
		struct frame *f = &bases[nbases];
		struct xr_pkt pkt;
		FILE *in;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", CORPUS_DIR, de->d_name);
		in = fopen(path, "rb");
		if (!in)
			continue;
		f->len = (uint32_t)fread(f->data, 1, sizeof(f->data), in);
		fclose(in);
		if (xr_pkt_parse(f->data, f->len, &pkt) == XR_PARSE_OK) {
			f->data[pkt.bth_off + 5] = (uint8_t)(QPN >> 16);
			f->data[pkt.bth_off + 6] = (uint8_t)(QPN >> 8);
			f->data[pkt.bth_off + 7] = (uint8_t)QPN;
		}
		nbases++;
	}
	closedir(dir);
	return nbases ? 0 : -1;
}

static uint64_t rng = SEED;

static uint32_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* Offsets where the two parsers make decisions: the header fields they read. */
static uint32_t decision_offset(const struct frame *f)
{
	struct xr_pkt pkt;
	uint32_t l3 = XR_ETH_HLEN, udp, bth;
	static const uint8_t l3_fields[] = {0, 2, 3, 4, 5, 6, 7, 9};
	static const uint8_t udp_fields[] = {2, 3, 4, 5};
	static const uint8_t bth_fields[] = {0, 1, 1, 1};

	if (xr_pkt_parse(f->data, f->len, &pkt) == XR_PARSE_OK) {
		l3 = pkt.l3_off;
		udp = pkt.udp_off;
		bth = pkt.bth_off;
	} else {
		udp = l3 + XR_IPV4_HLEN;
		bth = udp + XR_UDP_HLEN;
	}
	switch (next_random() % 4) {
	case 0:
		return 12 + next_random() % 6; /* ethertype, VLAN tag */
	case 1:
		return l3 + l3_fields[next_random() % sizeof(l3_fields)];
	case 2:
		return udp + udp_fields[next_random() % sizeof(udp_fields)];
	default:
		return bth + bth_fields[next_random() % sizeof(bth_fields)];
	}
}

static void mutate(struct frame *f)
{
	int n = 1 + (int)(next_random() % 3);

	for (int i = 0; i < n; i++) {
		uint32_t off, k = next_random() % 10;

		if (k < 4) { /* a decision field: a small step or a bit */
			off = decision_offset(f);
			if (off >= f->len)
				continue;
			if (next_random() & 1)
				f->data[off] =
				    (uint8_t)(f->data[off] + (int)(next_random() % 9) - 4);
			else
				f->data[off] ^= (uint8_t)(1u << (next_random() % 8));
		} else if (k < 6 && f->len) { /* any byte */
			f->data[next_random() % f->len] = (uint8_t)next_random();
		} else if (k < 8 && f->len) { /* shorter */
			f->len -= next_random() % (f->len < 64 ? f->len : 64) + 1;
		} else if (k < 9) { /* longer */
			uint32_t add = next_random() % 32 + 1;

			if (f->len + add > XV_FRAME_MAX)
				continue;
			for (uint32_t j = 0; j < add; j++)
				f->data[f->len + j] = (uint8_t)next_random();
			f->len += add;
		} else if (f->len > 16) { /* a VLAN tag of either kind */
			if (f->len + 4 > XV_FRAME_MAX)
				continue;
			memmove(f->data + 16, f->data + 12, f->len - 12);
			put16(f->data + 12, next_random() & 1 ? ETH_P_8021Q : ETH_P_8021AD);
			f->len += 4;
		}
	}
}

static void corpus_and_mutations(void)
{
	int failures_before = failures, agreed = 0;
	char name[64];

	for (int i = 0; i < nbases; i++)
		agreed += agree("corpus frame", &bases[i]);
	printf("%s %-56s %d of %d agree\n", agreed == nbases ? "ok  " : "FAIL", "corpus frames",
	       agreed, nbases);
	agreed = 0;
	memset(agreed_on, 0, sizeof(agreed_on));
	for (int i = 0; i < MUTATIONS; i++) {
		struct frame f = bases[next_random() % nbases];

		mutate(&f);
		snprintf(name, sizeof(name), "mutation %d", i);
		agreed += agree(name, &f);
	}
	printf("%s %-56s %d of %d agree (seed 0x%llx)\n",
	       failures == failures_before ? "ok  " : "FAIL", "mutated frames", agreed, MUTATIONS,
	       (unsigned long long)SEED);
	printf("     well-formed %d, malformed %d, not RoCE %d\n", agreed_on[XV_WELL_FORMED],
	       agreed_on[XV_MALFORMED], agreed_on[XV_NOT_ROCE]);
	/* Mutations that never leave one verdict test nothing of the boundaries between them. */
	for (int v = 0; v < XV_NVERDICTS; v++)
		if (agreed_on[v] < MUTATIONS / 50) {
			printf("FAIL %-56s only %d %s\n", "mutations reach every verdict",
			       agreed_on[v], xv_verdict_names[v]);
			failures++;
		}
}

int main(void)
{
	struct xr_qp_entry qp = {.state = XR_XDP_QP_ACTIVE, .qp_type = XR_QPT_RC, .qpn = QPN};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (xt_load("test_xdp_parser_agree"))
		return 1;
	xt_put_entry(QPN, &qp);
	named_cases();
	if (load_corpus()) {
		fprintf(stderr, "test_xdp_parser_agree: no corpus frames in %s\n", CORPUS_DIR);
		failures++;
	} else {
		corpus_and_mutations();
	}
	if (disagreements)
		printf("%d frame(s) where XDP and the parser disagree\n", disagreements);
	return xt_finish(failures);
}
