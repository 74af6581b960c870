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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "report.h"
#include "xdp_attach.h"

static const char usage[] =
    "usage: xroce COMMAND [IFNAME] [--json]\n"
    "  attach IFNAME   load the XDP program on IFNAME and pin it under " XR_PIN_ROOT "/IFNAME\n"
    "  detach IFNAME   remove it; IFNAME is left as it was before attach\n"
    "  status          list the interfaces xroce is attached to\n"
    "  stats IFNAME    per-reason frame counters of IFNAME's program and engine\n"
    "  stats IFNAME --watch [SECONDS]\n"
    "                  per-second rates of the counters that moved, every SECONDS\n"
    "                  (default 1) until Ctrl-C\n"
    "  qps IFNAME      the queue pairs open on IFNAME: state, PSNs, counters\n"
    "  gids IFNAME     IFNAME's GID table, in the order the library (and rxe) uses\n"
    "  help            this text\n"
    "--json makes status, stats, qps and gids print one JSON document (stats --watch:\n"
    "one per line); its fields are described in docs/json-output.md.\n"
    "Set XROCE_DEBUG=1 to see libbpf's messages (verifier log, load errors).\n";

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
	case -EPROTO:
		fprintf(stderr,
			"xroce: %s: pinned by a different xroce version (run xroce detach %s, then "
			"attach)\n",
			ifname, ifname);
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

static int run_report(const char *cmd, int argc, char **argv)
{
	struct report_options o;
	int err;

	if (report_parse_options(cmd, argc - 2, argv + 2, !strcmp(cmd, "stats"), &o)) {
		fputs(usage, stderr);
		return 1;
	}
	if (!strcmp(cmd, "stats"))
		err = report_stats(&o);
	else if (!strcmp(cmd, "qps"))
		err = report_qps(&o);
	else
		err = report_gids(&o);
	return err ? fail(cmd, o.ifname, err) : 0;
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
		if (argc == 3 && !strcmp(argv[2], "--json"))
			return report_status_json();
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
	if (!strcmp(cmd, "stats") || !strcmp(cmd, "qps") || !strcmp(cmd, "gids"))
		return run_report(cmd, argc, argv);
	fprintf(stderr, "xroce: unknown command: %s\n%s", cmd, usage);
	return 1;
}
