/* SPDX-License-Identifier: MIT */
/*
 * What the two-process end-to-end tests share besides tool_common.h: a
 * verdict with the first failure or a summary, data patterns that show a
 * shifted or reordered copy, posting and checks of completions, the
 * out-of-band connection and the command line.
 */
#ifndef XROCE_E2E_COMMON_H
#define XROCE_E2E_COMMON_H

#include <inttypes.h>
#include <stdarg.h>

#include "../../user/tools/tool_common.h"

/* First failure of a case, or a summary of what was checked when it passed. */
struct report {
	bool failed;
	char detail[320];
};

static inline void report_fail(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void report_fail(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = true;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

static inline void report_ok(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void report_ok(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

/* A per-case, position-dependent byte: a shifted or reordered copy shows. */
static inline uint8_t pattern_byte(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 0x9e3779b1u ^ seed * 0x85ebca6bu;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	return (uint8_t)x;
}

static inline void fill_pattern(uint8_t *buf, uint32_t seed, size_t from, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern_byte(seed, from + i);
}

/* Checks one completion against what it must be; describes the first difference in r. */
static inline bool check_wc(const struct xr_wc *wc, uint64_t wr_id, enum xr_wc_status status,
			    enum xr_wc_opcode opcode, struct report *r)
{
	if (wc->wr_id != wr_id) {
		report_fail(r, "completion for wr_id 0x%" PRIx64 ", expected 0x%" PRIx64 " (%s)",
			    wc->wr_id, wr_id, xr_wc_status_str(wc->status));
		return false;
	}
	if (wc->status != status) {
		report_fail(r, "wr_id 0x%" PRIx64 " completed with \"%s\", expected \"%s\"",
			    wc->wr_id, xr_wc_status_str(wc->status), xr_wc_status_str(status));
		return false;
	}
	/* The opcode of an error completion is undefined in verbs. */
	if (status == XR_WC_SUCCESS && wc->opcode != opcode) {
		report_fail(r, "wr_id 0x%" PRIx64 " has opcode %d, expected %d", wc->wr_id,
			    wc->opcode, opcode);
		return false;
	}
	return true;
}

/* True when nothing arrives on cq for wait_ms; an unexpected completion is described in r. */
static inline bool expect_quiet(struct xr_cq *cq, int wait_ms, struct report *r, const char *what)
{
	struct xr_wc wc;

	if (poll_cq_until(cq, &wc, 1, 1, tool_now_ms() + wait_ms) == 0)
		return true;
	report_fail(r, "unexpected %s completion: wr_id 0x%" PRIx64 ", status \"%s\", opcode %d",
		    what, wc.wr_id, xr_wc_status_str(wc.status), wc.opcode);
	return false;
}

/* A case's wr_ids: the case in the high half, so a stray completion shows whose it is. */
static inline uint64_t case_wr_id(int case_index, uint32_t n)
{
	return (uint64_t)(case_index + 1) << 32 | n;
}

static inline struct xr_sge sge_of(struct xr_mr *mr, uint8_t *addr, uint32_t length)
{
	return (struct xr_sge){.addr = (uintptr_t)addr, .length = length, .lkey = mr->lkey};
}

/* Posts one send WR; a refusal is described in r. */
static inline bool e2e_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct report *r)
{
	struct xr_send_wr *bad;
	int ret = xr_post_send(qp, wr, &bad);

	if (ret)
		report_fail(r, "xr_post_send: %s", strerror(-ret));
	return !ret;
}

/*
 * The test's out-of-band connection: the server (server_ip NULL) accepts
 * the client, the client connects to the server. -1 after saying why.
 */
static inline int e2e_oob_open(const char *server_ip, unsigned int port, int accept_timeout_ms,
			       int connect_retry_ms, int attempt_timeout_ms)
{
	const char *why;
	int fd = server_ip
		     ? oob_connect(server_ip, port, connect_retry_ms, attempt_timeout_ms, &why)
		     : oob_accept(AF_INET, port, accept_timeout_ms, &why);

	if (fd < 0 && server_ip)
		fprintf(stderr, "%s: couldn't connect to %s:%u: %s\n",
			program_invocation_short_name, server_ip, port, why);
	else if (fd < 0)
		fprintf(stderr, "%s: no client on port %u: %s\n", program_invocation_short_name,
			port, why);
	return fd;
}

/* The command line of a two-process test. */
struct e2e_args {
	bool is_server;
	const char *role; /* "server" or "client" */
	const char *ifname;
	const char *server_ip;
	unsigned int port;
};

/*
 * Parses "server IFNAME [-p PORT]" or "client IFNAME SERVER_IP [-p PORT]"
 * into *a (whose port holds the default); false on a usage error.
 */
static inline bool e2e_parse_args(int argc, char **argv, struct e2e_args *a)
{
	int args = 3;

	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		return false;
	a->is_server = !strcmp(argv[1], "server");
	a->role = argv[1];
	a->ifname = argv[2];
	if (!a->is_server) {
		if (argc < 4)
			return false;
		a->server_ip = argv[args++];
	}
	if (argc == args + 2 && !strcmp(argv[args], "-p")) {
		a->port = (unsigned int)strtoul(argv[args + 1], NULL, 10);
		args += 2;
	}
	return argc == args && a->port > 0 && a->port <= 65535;
}

#endif /* XROCE_E2E_COMMON_H */
