/* SPDX-License-Identifier: MIT */
/*
 * What the XDP program and the engine's parser make of one frame, in the
 * three verdicts both must agree on: well-formed RoCEv2, malformed RoCEv2,
 * not RoCE. XDP's verdict is the counter its run moved: passed_non_roce is
 * not RoCE; drop_truncated, drop_bad_tver, drop_bad_opcode and
 * drop_bad_length are malformed; anything else (steered, or dropped for a
 * QP-level reason) is well-formed. Shared by test_xdp_parser_agree and the
 * fuzz_xdp_agree harness; header-only, on top of xdp_test_common.h (the
 * program must be loaded in xt).
 */
#ifndef XROCE_TESTS_XDP_VERDICT_H
#define XROCE_TESTS_XDP_VERDICT_H

#include <linux/if_ether.h>

#include "../xdp/xdp_test_common.h"
#include "core/packet.h"

/* The largest frame a test run takes here (a page, less XDP's headroom). */
#define XV_FRAME_MAX 2048

enum xv_verdict { XV_WELL_FORMED, XV_MALFORMED, XV_NOT_ROCE, XV_NVERDICTS };

static const char *const xv_verdict_names[XV_NVERDICTS] = {"well-formed", "malformed", "not RoCE"};

static inline enum xv_verdict xv_parser_verdict(const uint8_t *frame, uint32_t len,
						enum xr_parse_result *r)
{
	struct xr_pkt pkt;

	*r = xr_pkt_parse(frame, len, &pkt);
	return *r == XR_PARSE_OK	 ? XV_WELL_FORMED
	       : *r == XR_PARSE_NOT_ROCE ? XV_NOT_ROCE
					 : XV_MALFORMED;
}

/*
 * The program's verdict on len bytes (at most XV_FRAME_MAX), *counter the
 * counter that says so; -1 (after saying why) when the test run failed.
 */
static inline int xv_xdp_verdict(const uint8_t *frame, uint32_t len, const char **counter)
{
	static const size_t malformed[] = {
	    XT_COUNTER_INDEX(drop_truncated), XT_COUNTER_INDEX(drop_bad_tver),
	    XT_COUNTER_INDEX(drop_bad_opcode), XT_COUNTER_INDEX(drop_bad_length)};
	__u64 before[XT_NCOUNTERS], after[XT_NCOUNTERS];
	uint8_t out[XV_FRAME_MAX + 256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);

	/* A test run needs an Ethernet header; a shorter frame is nobody's RoCE. */
	if (len < ETH_HLEN) {
		*counter = "(too short to run)";
		return XV_NOT_ROCE;
	}
	*counter = "none";
	xt_read_counters(before);
	if (bpf_prog_test_run_opts(xt.prog_fd, &opts)) {
		fprintf(stderr, "test run of a %u-byte frame: %s\n", len, strerror(errno));
		return -1;
	}
	xt_read_counters(after);
	if (after[XT_COUNTER_INDEX(passed_non_roce)] != before[XT_COUNTER_INDEX(passed_non_roce)]) {
		*counter = "passed_non_roce";
		return XV_NOT_ROCE;
	}
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
		if (after[malformed[i]] != before[malformed[i]]) {
			*counter = xt_counter_names[malformed[i]];
			return XV_MALFORMED;
		}
	for (size_t i = 0; i < XT_NCOUNTERS; i++)
		if (after[i] != before[i] && i != XT_COUNTER_INDEX(roce_ipv6)) {
			*counter = xt_counter_names[i];
			break;
		}
	return XV_WELL_FORMED;
}

static inline void xv_print_hex(const uint8_t *frame, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		printf("%02x%s", frame[i], i % 16 == 15 || i + 1 == len ? "\n" : " ");
}

#endif
