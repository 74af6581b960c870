// SPDX-License-Identifier: MIT
/*
 * xroce: attaches the XDP program to interfaces and shows what it does.
 * Everything it knows lives in the pins under XR_PIN_ROOT, so it keeps no
 * state of its own and any number of invocations can look at one attachment.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "netlink.h"
#include "xroce/wire.h"
#include "xdp_attach.h"

static const char usage[] =
    "usage: xroce COMMAND [IFNAME]\n"
    "  attach IFNAME   load the XDP program on IFNAME and pin it under " XR_PIN_ROOT "/IFNAME\n"
    "  detach IFNAME   remove it; IFNAME is left as it was before attach\n"
    "  status          list the interfaces xroce is attached to\n"
    "  stats IFNAME    per-reason frame counters of IFNAME's program and engine\n"
    "  qps IFNAME      the queue pairs open on IFNAME: state, PSNs, counters\n"
    "  gids IFNAME     IFNAME's GID table, in the order the library (and rxe) uses\n"
    "  help            this text\n"
    "Set XROCE_DEBUG=1 to see libbpf's messages (verifier log, load errors).\n";

static const struct {
	const char *name;
	size_t offset;
} stat_fields[] = {
    {"passed_non_roce", offsetof(struct xr_xdp_stats, passed_non_roce)},
    {"redirected", offsetof(struct xr_xdp_stats, redirected)},
    {"drop_truncated", offsetof(struct xr_xdp_stats, drop_truncated)},
    {"drop_bad_tver", offsetof(struct xr_xdp_stats, drop_bad_tver)},
    {"drop_bad_opcode", offsetof(struct xr_xdp_stats, drop_bad_opcode)},
    {"drop_bad_length", offsetof(struct xr_xdp_stats, drop_bad_length)},
    {"drop_unknown_qp", offsetof(struct xr_xdp_stats, drop_unknown_qp)},
    {"drop_qp_state", offsetof(struct xr_xdp_stats, drop_qp_state)},
    {"drop_no_socket", offsetof(struct xr_xdp_stats, drop_no_socket)},
    {"drop_bad_icrc", offsetof(struct xr_xdp_stats, drop_bad_icrc)},
    {"acks_absorbed", offsetof(struct xr_xdp_stats, acks_absorbed)},
    {"acks_to_engine", offsetof(struct xr_xdp_stats, acks_to_engine)},
    {"dups_answered", offsetof(struct xr_xdp_stats, dups_answered)},
};

/* The engine's counters, printed after the program's with an engine_ prefix. */
static const struct {
	const char *name;
	size_t offset;
} engine_fields[] = {
#define ENGINE_FIELD(f)                                                                            \
	{                                                                                          \
		"engine_" #f, offsetof(struct xr_engine_stats, f)                                  \
	}
    ENGINE_FIELD(rx_frames),	 ENGINE_FIELD(rx_bad_icrc),  ENGINE_FIELD(rx_malformed),
    ENGINE_FIELD(rx_unknown_qp), ENGINE_FIELD(rx_bad_state), ENGINE_FIELD(rx_bad_pkey),
    ENGINE_FIELD(tx_frames),	 ENGINE_FIELD(tx_no_buffer), ENGINE_FIELD(retransmits),
    ENGINE_FIELD(timeouts),	 ENGINE_FIELD(seq_naks_tx),  ENGINE_FIELD(rnr_naks_tx),
    ENGINE_FIELD(rnr_naks_rx),	 ENGINE_FIELD(dup_requests),
#undef ENGINE_FIELD
};

_Static_assert(sizeof(engine_fields) / sizeof(engine_fields[0]) ==
		   sizeof(struct xr_engine_stats) / sizeof(__u64),
	       "every counter of struct xr_engine_stats is listed in engine_fields");

_Static_assert(sizeof(stat_fields) / sizeof(stat_fields[0]) ==
		   sizeof(struct xr_xdp_stats) / sizeof(__u64),
	       "every counter of struct xr_xdp_stats is listed in stat_fields");

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

/* Prints the one-line error for err from an operation on ifname; returns 1. */
static int fail(const char *what, const char *ifname, int err)
{
	switch (err) {
	case -ENODEV:
		fprintf(stderr, "xroce: no such interface: %s\n", ifname);
		break;
	case -EPERM:
	case -EACCES:
		fprintf(stderr, "xroce: not permitted (run as root)\n");
		break;
	case -ENOENT:
		fprintf(stderr, "xroce: not attached: %s\n", ifname);
		break;
	case -EEXIST:
		if (xr_xdp_is_attached(ifname))
			fprintf(stderr, "xroce: already attached: %s\n", ifname);
		else
			fprintf(stderr, "xroce: another XDP program is already attached to %s\n",
				ifname);
		break;
	default:
		fprintf(stderr, "xroce: %s %s: %s\n", what, ifname, strerror(-err));
	}
	return 1;
}

static int cmd_attach(const char *ifname)
{
	int err = xr_xdp_attach(ifname);

	if (err)
		return fail("attach", ifname, err);
	printf("attached to %s, pinned under %s/%s\n", ifname, XR_PIN_ROOT, ifname);
	return 0;
}

static int cmd_detach(const char *ifname)
{
	int err = xr_xdp_detach(ifname);

	if (err)
		return fail("detach", ifname, err);
	printf("detached from %s\n", ifname);
	return 0;
}

static int cmd_stats(const char *ifname)
{
	struct xr_engine_stats engine;
	struct xr_xdp_stats sum;
	size_t i;
	int err;

	err = xr_xdp_read_stats(ifname, &sum);
	if (err)
		return fail("stats", ifname, err);
	for (i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		printf("%-16s %llu\n", stat_fields[i].name,
		       (unsigned long long)*(__u64 *)((char *)&sum + stat_fields[i].offset));
	err = xr_xdp_read_engine_stats(ifname, &engine);
	if (err)
		return fail("stats", ifname, err);
	for (i = 0; i < sizeof(engine_fields) / sizeof(engine_fields[0]); i++)
		printf("%-20s %llu\n", engine_fields[i].name,
		       (unsigned long long)*(__u64 *)((char *)&engine + engine_fields[i].offset));
	return 0;
}

/*
 * One line for ifname's attachment. A link whose interface has gone (its
 * namespace deleted) reports ifindex 0: it still holds pins, so say so.
 */
static int print_status(const char *ifname)
{
	struct bpf_link_info link = {0};
	__u32 len = sizeof(link);
	struct xr_xdp_handle h;
	char path[PATH_MAX];
	unsigned int qps = 0, i;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s/%s", XR_PIN_ROOT, ifname, XR_PIN_PROG_LINK);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return fail("status", ifname, -errno);
	err = bpf_obj_get_info_by_fd(fd, &link, &len) ? -errno : 0;
	close(fd);
	if (err)
		return fail("status", ifname, err);

	err = xr_xdp_open(ifname, &h);
	if (err)
		return fail("status", ifname, err);
	for (i = 0; i < XR_MAX_QP; i++)
		qps += h.qp_table[i].state != XR_XDP_QP_NONE;
	xr_xdp_close(&h);

	printf("%s: pins %s/%s, prog id %u, link id %u, ", ifname, XR_PIN_ROOT, ifname,
	       link.prog_id, link.id);
	if (link.xdp.ifindex)
		printf("ifindex %u, ", link.xdp.ifindex);
	else
		printf("interface gone (run xroce detach %s), ", ifname);
	printf("QPs in use %u\n", qps);
	return 0;
}

static int cmd_status(void)
{
	struct dirent *entry;
	int failed = 0, shown = 0;
	DIR *dir;

	dir = opendir(XR_PIN_ROOT);
	if (!dir) {
		if (errno == EACCES || errno == EPERM)
			return fail("status", XR_PIN_ROOT, -EPERM);
		if (errno != ENOENT)
			return fail("status", XR_PIN_ROOT, -errno);
	}
	while (dir && (entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		failed |= print_status(entry->d_name);
		shown++;
	}
	if (dir)
		closedir(dir);
	if (!shown)
		printf("not attached to any interface\n");
	return failed;
}

static int need_ifname(int argc, char **argv)
{
	if (argc == 3)
		return 0;
	fprintf(stderr, "xroce: %s needs exactly one interface name\n%s", argv[1], usage);
	return 1;
}

static const char *const xdp_state_names[] = {"none", "active", "closed"};

/* One line per QP slot in use: what XDP and the engine share about it. */
static int cmd_qps(const char *ifname)
{
	struct xr_xdp_handle h;
	int err, shown = 0;

	err = xr_xdp_open(ifname, &h);
	if (err)
		return fail("qps", ifname, err);
	for (uint32_t i = 0; i < XR_MAX_QP; i++) {
		const struct xr_qp_entry *e = &h.qp_table[i];

		if (e->state == XR_XDP_QP_NONE)
			continue;
		if (!shown++)
			printf("%-8s %-6s %-8s %-15s %-8s %-8s %10s %10s %8s %8s %9s %9s\n", "qpn",
			       "state", "dest", "expected/msn", "acked", "next", "rx", "tx",
			       "retrans", "timeouts", "acks_xdp", "dups_xdp");
		printf(
		    "0x%06x %-6s 0x%06x 0x%06x/%-6u 0x%06x 0x%06x %10llu %10llu %8llu %8llu %9llu "
		    "%9llu\n",
		    XR_QPN_BASE + i, e->state < 3 ? xdp_state_names[e->state] : "?", e->dest_qpn,
		    (unsigned)(e->committed & XR_PSN_MASK), (unsigned)(e->committed >> 32),
		    (unsigned)(e->xdp_ack & XR_PSN_MASK), e->req_next_psn,
		    (unsigned long long)e->rx_frames, (unsigned long long)e->counters.tx_frames,
		    (unsigned long long)e->counters.retransmits,
		    (unsigned long long)e->counters.timeouts, (unsigned long long)e->acks_absorbed,
		    (unsigned long long)e->dups_answered);
	}
	if (!shown)
		printf("no queue pairs open on %s\n", ifname);
	xr_xdp_close(&h);
	return 0;
}

static int cmd_gids(const char *ifname)
{
	struct xr_netdev_info info;
	union xr_gid gids[XR_MAX_GIDS];
	int n, err;

	err = xr_nl_get_link(ifname, &info);
	if (err)
		return fail("gids", ifname, err);
	n = xr_nl_get_gids(info.ifindex, info.mac, gids, XR_MAX_GIDS);
	if (n < 0)
		return fail("gids", ifname, n);
	for (int i = 0; i < n; i++) {
		printf("%d ", i);
		for (int b = 0; b < 16; b += 2)
			printf("%02x%02x%s", gids[i].raw[b], gids[i].raw[b + 1],
			       b < 14 ? ":" : "\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!getenv("XROCE_DEBUG"))
		libbpf_set_print(libbpf_quiet);

	if (!cmd) {
		fputs(usage, stderr);
		return 1;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "status")) {
		if (argc != 2) {
			fprintf(stderr, "xroce: status takes no argument\n%s", usage);
			return 1;
		}
		return cmd_status();
	}
	if (!strcmp(cmd, "attach"))
		return need_ifname(argc, argv) ?: cmd_attach(argv[2]);
	if (!strcmp(cmd, "detach"))
		return need_ifname(argc, argv) ?: cmd_detach(argv[2]);
	if (!strcmp(cmd, "stats"))
		return need_ifname(argc, argv) ?: cmd_stats(argv[2]);
	if (!strcmp(cmd, "qps"))
		return need_ifname(argc, argv) ?: cmd_qps(argv[2]);
	if (!strcmp(cmd, "gids"))
		return need_ifname(argc, argv) ?: cmd_gids(argv[2]);
	fprintf(stderr, "xroce: unknown command: %s\n%s", cmd, usage);
	return 1;
}
