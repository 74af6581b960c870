// SPDX-License-Identifier: MIT
/*
 * libFuzzer form of test_xdp_parser_agree: every input is one frame, run
 * through the real XDP program (BPF_PROG_TEST_RUN, no attach) and through
 * xr_pkt_parse; their verdicts (well-formed, malformed, not RoCE: see
 * xdp_verdict.h) must be the same. Coverage guides it through the parser's
 * branches (the BPF program itself is not instrumented). The destination QP
 * of the corpus frames exists in qp_table, so that well-formed frames get
 * past the QP lookup. Needs root (loading BPF programs).
 */
#include <stdint.h>
#include <stdlib.h>

#include "xdp_verdict.h"

/* The first QPNs xroce and rxe hand out: the captures' frames find their QP. */
#define KNOWN_QPS 8

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct xr_qp_entry qp = {.state = XR_XDP_QP_ACTIVE, .qp_type = XR_QPT_RC};

	(void)argc;
	(void)argv;
	if (xt_load("fuzz_xdp_agree"))
		exit(1);
	for (uint32_t qpn = XR_QPN_BASE; qpn < XR_QPN_BASE + KNOWN_QPS; qpn++) {
		qp.qpn = qpn;
		xt_put_entry(qpn, &qp);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum xr_parse_result r;
	enum xv_verdict engine;
	const char *counter;
	int xdp;

	if (size > XV_FRAME_MAX)
		return -1; /* not added to the corpus */
	engine = xv_parser_verdict(data, (uint32_t)size, &r);
	xdp = xv_xdp_verdict(data, (uint32_t)size, &counter);
	if (xdp < 0)
		abort();
	if (xdp != (int)engine) {
		printf("fuzz_xdp_agree: disagreement: XDP %s (%s), parser %s (%s); %zu bytes:\n",
		       xv_verdict_names[xdp], counter, xv_verdict_names[engine],
		       xr_parse_result_str(r), size);
		xv_print_hex(data, (uint32_t)size);
		abort();
	}
	return 0;
}
