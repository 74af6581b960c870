/* SPDX-License-Identifier: MIT */
/*
 * The wire layer against the golden Soft-RoCE captures: every RoCE frame in
 * the vector directory must parse, match what tshark decoded from it
 * (tests/unit/vectors_expected.txt, written by gen_expected.sh), carry a
 * valid ICRC that any single-byte corruption outside the masked fields
 * breaks, and use the UDP source port rxe derives from the sender's QPN.
 *
 * Run from the repository root; XROCE_VECTORS overrides the capture directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_group.h"
#include "core/packet.h"
#include "pcap_reader.h"

#define EXPECTED_PATH "tests/unit/vectors_expected.txt"
#define MAX_FRAMES_PER_FILE 256
#define MAX_FRAME_LEN 2048

/* The README's table: how many RoCE frames each capture holds. */
static const struct {
	const char *name;
	unsigned int roce_frames;
} capture_table[] = {
    {"rc_pingpong.pcap", 18},
    {"uc_pingpong.pcap", 12},
    {"ud_pingpong.pcap", 6},
    {"perftest_send_bw.pcap", 20},
    {"perftest_write_bw.pcap", 20},
    {"perftest_read_bw.pcap", 20},
    {"perftest_atomic_cmpswp.pcap", 10},
    {"perftest_atomic_fadd.pcap", 10},
    {"perftest_send_ud.pcap", 5},
    {"rdmacm_rping.pcap", 29},
    {"verbs_ops.pcap", 46},
    {"pyclient_vs_rc_pingpong.pcap", 10},
};
#define NUM_CAPTURES (sizeof(capture_table) / sizeof(capture_table[0]))

/* Columns of vectors_expected.txt after the file name, in order. */
enum column {
	COL_FRAME,
	COL_SPORT,
	COL_OPCODE,
	COL_SE,
	COL_PADCNT,
	COL_PKEY,
	COL_DQPN,
	COL_ACKREQ,
	COL_PSN,
	COL_VA,
	COL_RKEY,
	COL_DMALEN,
	COL_SWAP,
	COL_COMPARE,
	COL_AETH_SYNDROME,
	COL_AETH_MSN,
	COL_ATMACK_ORIG,
	COL_IMMDT,
	COL_QKEY,
	COL_SRC_QP,
	COL_ICRC,
	NUM_COLUMNS,
};

static const char *const column_names[NUM_COLUMNS] = {
    [COL_FRAME] = "frame",
    [COL_SPORT] = "sport",
    [COL_OPCODE] = "opcode",
    [COL_SE] = "se",
    [COL_PADCNT] = "padcnt",
    [COL_PKEY] = "pkey",
    [COL_DQPN] = "dqpn",
    [COL_ACKREQ] = "ackreq",
    [COL_PSN] = "psn",
    [COL_VA] = "va",
    [COL_RKEY] = "rkey",
    [COL_DMALEN] = "dmalen",
    [COL_SWAP] = "swap",
    [COL_COMPARE] = "compare",
    [COL_AETH_SYNDROME] = "aeth_syndrome",
    [COL_AETH_MSN] = "aeth_msn",
    [COL_ATMACK_ORIG] = "atomicack_orig",
    [COL_IMMDT] = "immdt",
    [COL_QKEY] = "qkey",
    [COL_SRC_QP] = "src_qp",
    [COL_ICRC] = "icrc",
};

struct field {
	bool present;
	uint64_t value;
};

struct expectation {
	char file[64];
	struct field col[NUM_COLUMNS];
	bool matched;
};

static struct expectation *expectations;
static size_t num_expectations;

static int load_expectations(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	size_t cap = 0;

	if (!f) {
		fprintf(stderr, "test_vectors: %s: %s (run from the repository root)\n", path,
			strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		struct expectation *e;
		char *save, *tok;
		int col = 0;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (num_expectations == cap) {
			cap = cap ? cap * 2 : 256;
			expectations = realloc(expectations, cap * sizeof(*expectations));
			if (!expectations) {
				fclose(f);
				return -ENOMEM;
			}
		}
		e = &expectations[num_expectations];
		memset(e, 0, sizeof(*e));
		tok = strtok_r(line, " \n", &save);
		if (!tok || strlen(tok) >= sizeof(e->file))
			goto malformed;
		strcpy(e->file, tok);
		while ((tok = strtok_r(NULL, " \n", &save))) {
			char *end;

			if (col == NUM_COLUMNS)
				goto malformed;
			if (strcmp(tok, "-") != 0) {
				errno = 0;
				e->col[col].value = strtoull(tok, &end, 0);
				if (errno || *end)
					goto malformed;
				e->col[col].present = true;
			}
			col++;
		}
		if (col != NUM_COLUMNS || !e->col[COL_FRAME].present)
			goto malformed;
		num_expectations++;
	}
	fclose(f);
	return 0;
malformed:
	fprintf(stderr, "test_vectors: %s: malformed line %zu\n", path, num_expectations + 1);
	fclose(f);
	return -EINVAL;
}

static struct expectation *find_expectation(const char *file, uint32_t frame)
{
	for (size_t i = 0; i < num_expectations; i++)
		if (expectations[i].col[COL_FRAME].value == frame &&
		    strcmp(expectations[i].file, file) == 0)
			return &expectations[i];
	return NULL;
}

/*
 * Recognises a RoCEv2 frame independently of xr_pkt_parse, so that frames the
 * parser wrongly rejects are still counted: Ethernet, IPv4, UDP to 4791.
 */
static bool is_roce_frame(const uint8_t *f, uint32_t len)
{
	uint32_t ihl;

	if (len < XR_ETH_HLEN + XR_IPV4_HLEN + XR_UDP_HLEN || f[12] != 0x08 || f[13] != 0x00)
		return false;
	ihl = (f[14] & 0x0f) * 4u;
	if (f[14 + 9] != 17 || len < XR_ETH_HLEN + ihl + XR_UDP_HLEN)
		return false;
	return (f[XR_ETH_HLEN + ihl + 2] << 8 | f[XR_ETH_HLEN + ihl + 3]) == XR_ROCEV2_UDP_PORT;
}

static uint32_t rd32be(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A RoCE frame kept for the checks that look at the whole capture. */
struct frame {
	uint8_t data[MAX_FRAME_LEN];
	uint32_t len, number;
	bool parsed;
	struct xr_pkt pkt; /* points into data */
};

struct capture {
	const char *name;
	struct frame *frames;
	unsigned int num_frames;
};

static struct capture captures[NUM_CAPTURES];

static int load_capture(struct capture *c, const char *name, struct group *reader)
{
	char path[512];
	struct pcap_file pf;
	struct pcap_record rec;
	int r;

	snprintf(path, sizeof(path), "%s/%s", vector_dir(), name);
	c->name = name;
	c->frames = calloc(MAX_FRAMES_PER_FILE, sizeof(*c->frames));
	if (!c->frames)
		return -ENOMEM;
	r = pcap_open(path, &pf);
	check(reader, r == 0, "%s: pcap_open: %s", path, strerror(-r));
	if (r)
		return r;
	check(reader, pf.linktype == PCAP_LINKTYPE_ETHERNET, "%s: link type %u, not Ethernet", name,
	      pf.linktype);
	while ((r = pcap_next(&pf, &rec)) == 1) {
		struct frame *fr;

		check(reader, rec.caplen == rec.origlen, "%s frame %u: captured %u of %u bytes",
		      name, rec.number, rec.caplen, rec.origlen);
		if (!is_roce_frame(rec.data, rec.caplen))
			continue;
		check(reader, rec.caplen <= MAX_FRAME_LEN && c->num_frames < MAX_FRAMES_PER_FILE,
		      "%s frame %u: too big or too many frames", name, rec.number);
		if (rec.caplen > MAX_FRAME_LEN || c->num_frames == MAX_FRAMES_PER_FILE)
			continue;
		fr = &c->frames[c->num_frames++];
		memcpy(fr->data, rec.data, rec.caplen);
		fr->len = rec.caplen;
		fr->number = rec.number;
	}
	check(reader, r == 0, "%s: cut or corrupt record after frame %u", name, pf.records_read);
	pcap_close(&pf);
	return 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/*
 * The captures are little-endian microsecond files; rewrite one as a
 * big-endian nanosecond file and check the reader returns the same records.
 */
static void check_pcap_reader_variants(struct group *g)
{
	char src_path[512], tmp_path[] = "/tmp/xroce-test-vectors-XXXXXX";
	struct pcap_file src, dst;
	struct pcap_record a = {0}, b = {0};
	FILE *out;
	int fd, ra, rb;
	unsigned int records = 0;

	snprintf(src_path, sizeof(src_path), "%s/%s", vector_dir(), capture_table[0].name);
	if (pcap_open(src_path, &src) != 0) {
		check(g, false, "cannot open %s", src_path);
		return;
	}
	check(g, !src.swapped && !src.nsec, "%s: expected a little-endian microsecond file",
	      src_path);
	fd = mkstemp(tmp_path);
	out = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!out) {
		check(g, false, "cannot create a temporary file: %s", strerror(errno));
		pcap_close(&src);
		return;
	}
	{
		uint8_t hdr[PCAP_FILE_HDR_LEN];

		memcpy(hdr, src.data, sizeof(hdr));
		put_be32(hdr, PCAP_MAGIC_NSEC);
		hdr[4] = 0, hdr[5] = 2, hdr[6] = 0, hdr[7] = 4; /* version 2.4, big-endian */
		put_be32(hdr + 16, src.snaplen);
		put_be32(hdr + 20, src.linktype);
		fwrite(hdr, 1, sizeof(hdr), out);
	}
	while (pcap_next(&src, &a) == 1) {
		uint8_t rh[PCAP_REC_HDR_LEN];

		put_be32(rh, a.ts_sec);
		put_be32(rh + 4, a.ts_frac * 1000);
		put_be32(rh + 8, a.caplen);
		put_be32(rh + 12, a.origlen);
		fwrite(rh, 1, sizeof(rh), out);
		fwrite(a.data, 1, a.caplen, out);
	}
	check(g, fclose(out) == 0, "writing %s failed", tmp_path);

	src.pos = PCAP_FILE_HDR_LEN;
	src.records_read = 0;
	if (pcap_open(tmp_path, &dst) != 0) {
		check(g, false, "cannot reopen %s", tmp_path);
		pcap_close(&src);
		unlink(tmp_path);
		return;
	}
	check(g, dst.nsec && dst.swapped == (htonl(1) != 1),
	      "big-endian nanosecond header not recognised");
	check(g, dst.linktype == src.linktype, "link type %u != %u", dst.linktype, src.linktype);
	for (;;) {
		ra = pcap_next(&src, &a);
		rb = pcap_next(&dst, &b);
		check(g, ra == rb, "record %u: reader results %d vs %d", records + 1, ra, rb);
		if (ra != 1 || rb != 1)
			break;
		records++;
		check(g,
		      a.caplen == b.caplen && a.origlen == b.origlen && a.ts_sec == b.ts_sec &&
			  a.ts_frac * 1000 == b.ts_frac && a.number == b.number &&
			  memcmp(a.data, b.data, a.caplen) == 0,
		      "record %u differs after the byte-order/timestamp rewrite", records);
	}
	check(g, records > 0, "no records read");
	pcap_close(&src);
	pcap_close(&dst);
	unlink(tmp_path);
}

static void compare_field(struct group *g, const struct capture *c, const struct frame *fr,
			  const struct expectation *e, enum column col, bool present,
			  uint64_t value)
{
	const struct field *want = &e->col[col];

	if (want->present != present) {
		check(g, false, "%s frame %u opcode %u: %s %s by tshark but %s by xr_pkt_parse",
		      c->name, fr->number, fr->pkt.opcode, column_names[col],
		      want->present ? "shown" : "absent", present ? "decoded" : "absent");
		return;
	}
	check(g, !present || want->value == value,
	      "%s frame %u: %s = 0x%" PRIx64 ", tshark shows 0x%" PRIx64, c->name, fr->number,
	      column_names[col], value, want->value);
}

static void compare_with_tshark(struct group *g, const struct capture *c, const struct frame *fr,
				const struct expectation *e)
{
	const struct xr_pkt *p = &fr->pkt;
	uint32_t f = p->opflags;
	bool reth = f & XR_OPF_RETH, atm = f & XR_OPF_ATMETH;

	compare_field(g, c, fr, e, COL_SPORT, true, p->udp_sport);
	compare_field(g, c, fr, e, COL_OPCODE, true, p->opcode);
	compare_field(g, c, fr, e, COL_SE, true, p->se);
	compare_field(g, c, fr, e, COL_PADCNT, true, p->padcnt);
	compare_field(g, c, fr, e, COL_PKEY, true, p->pkey);
	compare_field(g, c, fr, e, COL_DQPN, true, p->dqpn);
	compare_field(g, c, fr, e, COL_ACKREQ, true, p->ackreq);
	compare_field(g, c, fr, e, COL_PSN, true, p->psn);
	/* tshark shows the AtomicETH VA and R_Key in its RETH fields. */
	compare_field(g, c, fr, e, COL_VA, reth || atm, reth ? p->reth_va : p->atm_va);
	compare_field(g, c, fr, e, COL_RKEY, reth || atm, reth ? p->reth_rkey : p->atm_rkey);
	compare_field(g, c, fr, e, COL_DMALEN, reth, p->reth_len);
	compare_field(g, c, fr, e, COL_SWAP, atm, p->atm_swap_add);
	compare_field(g, c, fr, e, COL_COMPARE, atm, p->atm_compare);
	compare_field(g, c, fr, e, COL_AETH_SYNDROME, f & XR_OPF_AETH, p->aeth_syndrome);
	compare_field(g, c, fr, e, COL_AETH_MSN, f & XR_OPF_AETH, p->aeth_msn);
	compare_field(g, c, fr, e, COL_ATMACK_ORIG, f & XR_OPF_ATMACK, p->atmack_orig);
	compare_field(g, c, fr, e, COL_IMMDT, f & XR_OPF_IMMDT, ntohl(p->imm_be));
	compare_field(g, c, fr, e, COL_QKEY, f & XR_OPF_DETH, p->deth_qkey);
	compare_field(g, c, fr, e, COL_SRC_QP, f & XR_OPF_DETH, p->deth_sqpn);
	/* tshark prints the ICRC bytes in wire order, read as a big-endian number. */
	compare_field(g, c, fr, e, COL_ICRC, true, rd32be(p->icrc));
}

static void check_parse(struct group *counts, struct group *parse)
{
	for (size_t i = 0; i < NUM_CAPTURES; i++) {
		struct capture *c = &captures[i];
		unsigned int listed = 0;

		for (size_t k = 0; k < num_expectations; k++)
			listed += strcmp(expectations[k].file, c->name) == 0;
		check(counts, c->num_frames == capture_table[i].roce_frames,
		      "%s: %u RoCE frames, README says %u", c->name, c->num_frames,
		      capture_table[i].roce_frames);
		check(counts, listed == capture_table[i].roce_frames,
		      "%s: %u frames in %s, README says %u", c->name, listed, EXPECTED_PATH,
		      capture_table[i].roce_frames);

		for (unsigned int n = 0; n < c->num_frames; n++) {
			struct frame *fr = &c->frames[n];
			enum xr_parse_result r = xr_pkt_parse(fr->data, fr->len, &fr->pkt);
			struct expectation *e;

			fr->parsed = r == XR_PARSE_OK;
			check(parse, fr->parsed, "%s frame %u: %s", c->name, fr->number,
			      xr_parse_result_str(r));
			e = find_expectation(c->name, fr->number);
			check(parse, e != NULL, "%s frame %u: not in %s (regenerate it?)", c->name,
			      fr->number, EXPECTED_PATH);
			if (!fr->parsed || !e)
				continue;
			e->matched = true;
			compare_with_tshark(parse, c, fr, e);
			check(parse, fr->pkt.l3_off == XR_ETH_HLEN && !fr->pkt.ipv6,
			      "%s frame %u: l3 at %u, ipv6 %d", c->name, fr->number, fr->pkt.l3_off,
			      fr->pkt.ipv6);
			check(parse, fr->pkt.icrc + XR_ICRC_SIZE == fr->data + fr->len,
			      "%s frame %u: ICRC not at the end of the frame", c->name, fr->number);
		}
	}
	for (size_t k = 0; k < num_expectations; k++)
		check(counts, expectations[k].matched,
		      "%s frame %" PRIu64 " is in %s but was not seen as RoCE",
		      expectations[k].file, expectations[k].col[COL_FRAME].value, EXPECTED_PATH);
}

static void check_icrc_valid(struct group *g)
{
	for (size_t i = 0; i < NUM_CAPTURES; i++) {
		const struct capture *c = &captures[i];

		for (unsigned int n = 0; n < c->num_frames; n++) {
			const struct frame *fr = &c->frames[n];
			uint32_t icrc_off;

			if (!fr->parsed)
				continue;
			icrc_off = (uint32_t)(fr->pkt.icrc - fr->data);
			check(g, xr_pkt_icrc_ok(&fr->pkt), "%s frame %u: ICRC does not verify",
			      c->name, fr->number);
			/* The stored ICRC is little-endian. */
			check(g,
			      xr_icrc(fr->data, fr->pkt.l3_off, false, icrc_off) ==
				  __builtin_bswap32(rd32be(fr->pkt.icrc)),
			      "%s frame %u: xr_icrc 0x%08x, frame holds 0x%08x (LE)", c->name,
			      fr->number, xr_icrc(fr->data, fr->pkt.l3_off, false, icrc_off),
			      __builtin_bswap32(rd32be(fr->pkt.icrc)));
		}
	}
}

/* Bytes the ICRC treats as all ones: IPv4 TOS, TTL, checksum; UDP checksum; BTH byte 4. */
static bool is_masked_byte(const struct xr_pkt *p, uint32_t pos)
{
	uint32_t l3 = p->l3_off, udp = p->udp_off, bth = p->bth_off;

	return pos == l3 + 1 || pos == l3 + 8 || pos == l3 + 10 || pos == l3 + 11 ||
	       pos == udp + 6 || pos == udp + 7 || pos == bth + 4;
}

/* The ICRC covers the IP header through the ICRC itself; not the Ethernet header. */
static bool is_covered_byte(const struct xr_pkt *p, uint32_t pos)
{
	return pos >= p->l3_off && pos < (uint32_t)(p->icrc - p->frame) + XR_ICRC_SIZE;
}

/*
 * Corrupts one byte of a copy of fr and checks the ICRC verdict: false for
 * covered, unmasked bytes; true for masked bytes and the Ethernet header.
 * The layout comes from parsing the intact frame, as a receiver that
 * checks the ICRC after parsing would see it, except for the IPv4
 * version/IHL byte, which moves every later header: that frame is re-parsed
 * and counts as rejected if the parser refuses it.
 */
static void check_flip(struct group *g, const struct capture *c, const struct frame *fr,
		       uint32_t pos, uint8_t mask, unsigned long *by_parser)
{
	uint8_t buf[MAX_FRAME_LEN];
	struct xr_pkt pkt;
	bool expect_ok, ok;

	memcpy(buf, fr->data, fr->len);
	if (xr_pkt_parse(buf, fr->len, &pkt) != XR_PARSE_OK) {
		check(g, false, "%s frame %u does not parse", c->name, fr->number);
		return;
	}
	expect_ok = !is_covered_byte(&pkt, pos) || is_masked_byte(&pkt, pos);
	buf[pos] ^= mask;
	if (pos == pkt.l3_off) {
		if (xr_pkt_parse(buf, fr->len, &pkt) != XR_PARSE_OK) {
			++*by_parser;
			return;
		}
	}
	ok = xr_pkt_icrc_ok(&pkt);
	check(g, ok == expect_ok, "%s frame %u: byte %u ^ 0x%02x: ICRC %s, expected %s", c->name,
	      fr->number, pos, mask, ok ? "ok" : "bad", expect_ok ? "ok" : "bad");
}

/* Every byte, two masks, of the first frame of each opcode across all captures. */
static void check_flips_exhaustive(struct group *g, char *detail, size_t detail_len)
{
	bool seen[256] = {false};
	unsigned long by_parser = 0, frames = 0;

	for (size_t i = 0; i < NUM_CAPTURES; i++) {
		const struct capture *c = &captures[i];

		for (unsigned int n = 0; n < c->num_frames; n++) {
			const struct frame *fr = &c->frames[n];

			if (!fr->parsed || seen[fr->pkt.opcode])
				continue;
			seen[fr->pkt.opcode] = true;
			frames++;
			for (uint32_t pos = 0; pos < fr->len; pos++) {
				check_flip(g, c, fr, pos, 0x01, &by_parser);
				check_flip(g, c, fr, pos, 0xff, &by_parser);
			}
		}
	}
	snprintf(detail, detail_len, "%lu frames (one per opcode), %lu flips refused by the parser",
		 frames, by_parser);
}

/* A deterministic sample of positions and masks in every frame. */
static void check_flips_sampled(struct group *g, char *detail, size_t detail_len)
{
	uint32_t state = 0x2545f491;
	unsigned long by_parser = 0, frames = 0;

	for (size_t i = 0; i < NUM_CAPTURES; i++) {
		const struct capture *c = &captures[i];

		for (unsigned int n = 0; n < c->num_frames; n++) {
			const struct frame *fr = &c->frames[n];

			if (!fr->parsed)
				continue;
			frames++;
			for (int k = 0; k < 32; k++) {
				uint8_t mask;

				state = state * 1664525u + 1013904223u;
				mask = (uint8_t)(state >> 24) | 1;
				check_flip(g, c, fr, (state >> 8) % fr->len, mask, &by_parser);
			}
		}
	}
	snprintf(detail, detail_len, "%lu frames x 32 positions", frames);
}

/* Any value in a masked field keeps the ICRC valid, and the frame still parses. */
static void check_masked_fields(struct group *g)
{
	static const uint8_t values[] = {0x00, 0x01, 0x5a, 0x80, 0xff};

	for (size_t i = 0; i < NUM_CAPTURES; i++) {
		const struct capture *c = &captures[i];

		for (unsigned int n = 0; n < c->num_frames; n++) {
			const struct frame *fr = &c->frames[n];
			uint8_t buf[MAX_FRAME_LEN];

			if (!fr->parsed)
				continue;
			for (uint32_t pos = 0; pos < fr->len; pos++) {
				if (!is_masked_byte(&fr->pkt, pos))
					continue;
				for (size_t v = 0; v < sizeof(values); v++) {
					struct xr_pkt pkt;
					enum xr_parse_result r;

					memcpy(buf, fr->data, fr->len);
					buf[pos] = values[v];
					r = xr_pkt_parse(buf, fr->len, &pkt);
					check(g, r == XR_PARSE_OK && xr_pkt_icrc_ok(&pkt),
					      "%s frame %u: byte %u = 0x%02x: %s, ICRC %s", c->name,
					      fr->number, pos, values[v], xr_parse_result_str(r),
					      r == XR_PARSE_OK && xr_pkt_icrc_ok(&pkt) ? "ok"
										       : "bad");
				}
			}
		}
	}
}

static uint32_t ipv4_of(const union xr_gid *gid)
{
	return rd32be(gid->raw + 12);
}

/*
 * The sender's QPN: DETH's source QP for UD; for RC/UC the destination QPN
 * of the connected-service frames going the other way, when that is one QPN.
 */
static bool sender_qpn(const struct capture *c, const struct frame *fr, uint32_t *qpn)
{
	bool found = false;

	if (fr->pkt.opflags & XR_OPF_DETH) {
		*qpn = fr->pkt.deth_sqpn;
		return true;
	}
	for (unsigned int n = 0; n < c->num_frames; n++) {
		const struct xr_pkt *o = &c->frames[n].pkt;

		if (!c->frames[n].parsed || (o->opflags & XR_OPF_DETH) ||
		    ipv4_of(&o->sgid) != ipv4_of(&fr->pkt.dgid) ||
		    ipv4_of(&o->dgid) != ipv4_of(&fr->pkt.sgid))
			continue;
		if (found && *qpn != o->dqpn)
			return false;
		*qpn = o->dqpn;
		found = true;
	}
	return found;
}

/* Connected QPs: the library's xr_udp_sport_for_conn must match what rxe sent. */
#define MAD_MGMT_CLASS_CM 0x07
#define CM_ATTR_CONNECT_REQUEST 0x0010
#define MAD_HDR_LEN 24
#define CM_REQ_PRIMARY_FLOW_LABEL_OFF 88

/* The Primary Flow Label of an rdma_cm ConnectRequest in the capture, or 0. */
static uint32_t cm_req_flow_label(const struct capture *c)
{
	for (unsigned int n = 0; n < c->num_frames; n++) {
		const struct xr_pkt *p = &c->frames[n].pkt;
		const uint8_t *mad = p->payload;

		if (c->frames[n].parsed && (p->opflags & XR_OPF_DETH) && p->dqpn == 1 &&
		    p->payload_len >= MAD_HDR_LEN + CM_REQ_PRIMARY_FLOW_LABEL_OFF + 4 &&
		    mad[1] == MAD_MGMT_CLASS_CM &&
		    (mad[16] << 8 | mad[17]) == CM_ATTR_CONNECT_REQUEST)
			return rd32be(mad + MAD_HDR_LEN + CM_REQ_PRIMARY_FLOW_LABEL_OFF) >> 12;
	}
	return 0;
}

/* The python peer is not rxe and picks its source port its own way. */
#define PYTHON_PEER_IPV4 0x0a4d0064u /* 10.77.0.100 */

static void check_udp_sport(struct group *ud, struct group *conn, char *ud_detail,
			    char *conn_detail, size_t detail_len)
{
	unsigned long ud_frames = 0, conn_frames = 0, unknown = 0, lib_matches = 0;

	for (size_t i = 0; i < NUM_CAPTURES; i++) {
		const struct capture *c = &captures[i];
		uint32_t flow_label = cm_req_flow_label(c);

		for (unsigned int n = 0; n < c->num_frames; n++) {
			const struct frame *fr = &c->frames[n];
			const struct xr_pkt *p = &fr->pkt;
			char src[INET_ADDRSTRLEN];
			uint32_t qpn;
			uint16_t want;

			if (!fr->parsed || ipv4_of(&p->sgid) == PYTHON_PEER_IPV4)
				continue;
			if (!sender_qpn(c, fr, &qpn)) {
				unknown++;
				continue;
			}
			inet_ntop(AF_INET, p->sgid.raw + 12, src, sizeof(src));
			if (p->opflags & XR_OPF_DETH) {
				ud_frames++;
				want = xr_udp_sport_for_qpn(qpn);
				check(ud, p->udp_sport == want,
				      "%s frame %u from %s: UDP source port 0x%04x, "
				      "xr_udp_sport_for_qpn(0x%06x) = 0x%04x",
				      c->name, fr->number, src, p->udp_sport, qpn, want);
				continue;
			}
			conn_frames++;
			lib_matches += p->udp_sport == xr_udp_sport_for_qpn(qpn);
			want = xr_udp_sport_for_conn(flow_label, qpn, p->dqpn);
			check(conn, p->udp_sport == want,
			      "%s frame %u from %s: UDP source port 0x%04x, "
			      "rdma_get_udp_sport(0x%05x, 0x%06x, 0x%06x) = 0x%04x",
			      c->name, fr->number, src, p->udp_sport, flow_label, qpn, p->dqpn,
			      want);
		}
	}
	snprintf(ud_detail, detail_len, "%lu UD frames", ud_frames);
	snprintf(conn_detail, detail_len,
		 "%lu RC/UC frames, %lu without a known sender QPN; "
		 "xr_udp_sport_for_qpn matches %lu of them",
		 conn_frames, unknown, lib_matches);
	check(conn, conn_frames > 0 && unknown == 0,
	      "%lu RC/UC frames, %lu without a known sender QPN", conn_frames, unknown);
}

int main(void)
{
	struct group reader = {.name = "pcap reader"},
		     counts = {.name = "RoCE frame counts vs README"},
		     parse = {.name = "parse vs tshark"}, icrc = {.name = "ICRC verifies"},
		     flips = {.name = "ICRC single-byte flips (all bytes)"},
		     sampled = {.name = "ICRC single-byte flips (sampled)"},
		     masked = {.name = "ICRC masked fields"},
		     ud_sport = {.name = "UDP sport, UD: xr_udp_sport_for_qpn"},
		     conn_sport = {.name = "UDP sport, RC/UC: rdma_get_udp_sport"};
	char detail[160], detail2[160];

	if (load_expectations(EXPECTED_PATH) != 0)
		return 1;
	for (size_t i = 0; i < NUM_CAPTURES; i++)
		if (load_capture(&captures[i], capture_table[i].name, &reader) == -ENOMEM)
			return 1;
	check_pcap_reader_variants(&reader);
	finish_group(&reader, vector_dir());

	check_parse(&counts, &parse);
	finish_group(&counts, NULL);
	snprintf(detail, sizeof(detail), "%zu expected frames", num_expectations);
	finish_group(&parse, detail);

	check_icrc_valid(&icrc);
	finish_group(&icrc, NULL);
	check_flips_exhaustive(&flips, detail, sizeof(detail));
	finish_group(&flips, detail);
	check_flips_sampled(&sampled, detail, sizeof(detail));
	finish_group(&sampled, detail);
	check_masked_fields(&masked);
	finish_group(&masked, NULL);
	check_udp_sport(&ud_sport, &conn_sport, detail, detail2, sizeof(detail));
	finish_group(&ud_sport, detail);
	finish_group(&conn_sport, detail2);

	for (size_t i = 0; i < NUM_CAPTURES; i++)
		free(captures[i].frames);
	free(expectations);
	return groups_summary("test_vectors");
}
