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
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "report.h"
#include "xdp_attach.h"

static const char usage[] =
    "usage: xroce COMMAND [ARGS] [--json]\n"
    "  attach [--mode native|generic] IFNAME\n"
    "                  load the XDP program on IFNAME and pin it under " XR_PIN_ROOT "/IFNAME;\n"
    "                  without --mode: native, or generic (with a warning) when the driver\n"
    "                  has no native XDP; replaces a stale attachment of IFNAME\n"
    "  detach IFNAME   remove it; IFNAME is left as it was before attach\n"
    "  detach --stale  remove every stale attachment (interface gone or re-created)\n"
    "  gc              the same as detach --stale\n"
    "  status          list the attachments: interface, mode, stale ones and why\n"
    "  stats IFNAME    per-reason frame counters of IFNAME's program and engine\n"
    "  stats IFNAME --watch [SECONDS]\n"
    "                  per-second rates of the counters that moved, every SECONDS\n"
    "                  (default 1) until Ctrl-C\n"
    "  qps IFNAME      the queue pairs open on IFNAME: state, PSNs, counters\n"
    "  gids IFNAME     IFNAME's GID table, in the order the library (and rxe) uses\n"
    "  help            this text\n"
    "Pins are per interface name: run xroce in the interface's network namespace with\n"
    "nsenter --net=/var/run/netns/NS (not ip netns exec, which hides /sys/fs/bpf).\n"
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

/* The name under /var/run/netns of this process's network namespace, or "NS". */
static const char *netns_name(char *buf, size_t size)
{
	struct stat self, entry;
	struct dirent *d;
	char path[PATH_MAX];
	DIR *dir;

	snprintf(buf, size, "NS");
	if (stat("/proc/self/ns/net", &self))
		return buf;
	dir = opendir("/var/run/netns");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/var/run/netns/%s", d->d_name);
		if (stat(path, &entry) == 0 && entry.st_dev == self.st_dev &&
		    entry.st_ino == self.st_ino) {
			snprintf(buf, size, "%s", d->d_name);
			break;
		}
	}
	if (dir)
		closedir(dir);
	return buf;
}

/* Prints the one-line error for err from command `what` on ifname; returns 1. */
static int fail(const char *what, const char *ifname, int err)
{
	char ns[NAME_MAX + 1];

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
		fprintf(stderr, "xroce: already attached: %s\n", ifname);
		break;
	case -EXDEV:
		fprintf(
		    stderr,
		    "xroce: %s is attached in another network namespace (pins are per interface "
		    "name): detach it there first\n",
		    ifname);
		break;
	case -ENOMEDIUM:
		fprintf(
		    stderr,
		    "xroce: /sys/fs/bpf here is a private mount namespace's (ip netns exec), not "
		    "the host's bpffs: run nsenter --net=/var/run/netns/%s xroce %s%s%s instead\n",
		    netns_name(ns, sizeof(ns)), what, ifname ? " " : "", ifname ? ifname : "");
		break;
	case -EPROTO:
		fprintf(
		    stderr,
		    "xroce: %s's pins are another xroce build's (another map layout): detach it "
		    "with that build or xroce detach %s\n",
		    ifname, ifname);
		break;
	case -EOPNOTSUPP:
		fprintf(stderr,
			"xroce: %s's driver has no native XDP support: use --mode generic\n",
			ifname);
		break;
	case -ERANGE:
		fprintf(stderr,
			"xroce: %s's MTU is too large for native XDP: lower it or use --mode "
			"generic\n",
			ifname);
		break;
	default:
		fprintf(stderr, "xroce: %s%s%s: %s\n", what, ifname ? " " : "",
			ifname ? ifname : "", strerror(-err));
	}
	return 1;
}

static int cmd_attach(int argc, char **argv)
{
	struct xr_xdp_attach_opts opts = {.replace_stale = true};
	struct xr_xdp_attach_result res;
	const char *ifname;
	int err;

	if (argc == 5 && !strcmp(argv[2], "--mode")) {
		if (!strcmp(argv[3], "native"))
			opts.mode = XR_XDP_MODE_NATIVE;
		else if (!strcmp(argv[3], "generic"))
			opts.mode = XR_XDP_MODE_GENERIC;
		else {
			fprintf(stderr, "xroce: unknown mode: %s (native or generic)\n", argv[3]);
			return 1;
		}
		ifname = argv[4];
	} else if (argc == 3 && argv[2][0] != '-') {
		ifname = argv[2];
	} else {
		fprintf(stderr, "xroce: attach needs [--mode native|generic] IFNAME\n%s", usage);
		return 1;
	}
	err = xr_xdp_attach(ifname, &opts, &res);
	if (err == -EBUSY) {
		fprintf(stderr,
			"xroce: another XDP program is attached to %s: id %u name %s (remove it "
			"first: ip link set dev %s %s off)\n",
			ifname, res.other_prog_id,
			res.other_prog_name[0] ? res.other_prog_name : "?", ifname,
			res.other_prog_hook);
		return 1;
	}
	if (err)
		return fail("attach", ifname, err);
	if (res.replaced)
		printf("replaced a stale attachment of %s (%s)\n", ifname,
		       xr_xdp_stale_reason(res.replaced));
	if (res.fell_back)
		fprintf(
		    stderr,
		    "xroce: warning: %s's driver has no native XDP support: attached in generic "
		    "mode (slower)\n",
		    ifname);
	printf("attached to %s in %s mode, pinned under %s/%s\n", ifname,
	       xr_xdp_mode_name(res.mode), XR_PIN_ROOT, ifname);
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
 * Calls fn on every entry under XR_PIN_ROOT and counts them in *entries;
 * returns 1 if any call failed.
 */
static int for_each_pin_dir(const char *what, int (*fn)(const char *ifname, int *count), int *count,
			    int *entries)
{
	struct dirent *entry;
	int failed = 0, err;
	DIR *dir;

	*entries = 0;
	err = xr_xdp_check_bpffs();
	if (err)
		return fail(what, NULL, err);
	dir = opendir(XR_PIN_ROOT);
	if (!dir) {
		if (errno == EACCES || errno == EPERM)
			return fail(what, NULL, -EPERM);
		return errno == ENOENT ? 0 : fail(what, NULL, -errno);
	}
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		failed |= fn(entry->d_name, count);
		(*entries)++;
	}
	closedir(dir);
	return failed;
}

static int detach_if_stale(const char *ifname, int *removed)
{
	enum xr_xdp_state why;
	int err;

	err = xr_xdp_detach_if_stale(ifname, &why);
	if (err < 0)
		return fail("detach", ifname, err);
	if (err) {
		printf("removed the stale attachment of %s (%s)\n", ifname,
		       xr_xdp_stale_reason(why));
		(*removed)++;
	}
	return 0;
}

static int cmd_detach_stale(void)
{
	int removed = 0, entries, failed;

	failed = for_each_pin_dir("detach --stale", detach_if_stale, &removed, &entries);
	if (!failed && !removed)
		printf("no stale attachments\n");
	return failed;
}

/* QPs in use in ifname's table, or -1 when its maps cannot be opened. */
static int qps_in_use(const char *ifname)
{
	struct xr_xdp_handle h;
	int qps = 0;

	if (xr_xdp_open(ifname, &h))
		return -1;
	for (unsigned int i = 0; i < XR_MAX_QP; i++)
		qps += h.qp_table[i].state != XR_XDP_QP_NONE;
	xr_xdp_close(&h);
	return qps;
}

/* One line for ifname's attachment, saying whether it is stale and why; counts stale ones. */
static int print_status(const char *ifname, int *stale)
{
	struct xr_xdp_attachment a;
	struct xr_engine_port port;
	char bound[96];
	int err, qps;

	err = xr_xdp_inspect(ifname, &a);
	if (err)
		return fail("status", ifname, err);
	if (a.state == XR_XDP_NOT_ATTACHED)
		return 0; /* detached meanwhile */
	printf("%s: pins %s/%s, ", ifname, XR_PIN_ROOT, ifname);
	if (a.link_id)
		printf("prog id %u, link id %u, ", a.prog_id, a.link_id);
	switch (a.state) {
	case XR_XDP_LIVE:
		printf("ifindex %u, ", a.ifindex);
		break;
	case XR_XDP_OTHER_NETNS:
		printf("in another network namespace (ifindex %u there), ", a.ifindex);
		break;
	case XR_XDP_OTHER_BUILD:
		printf("ifindex %u, pinned by another xroce build, ", a.ifindex);
		break;
	default:
		printf("STALE (%s), ", xr_xdp_stale_reason(a.state));
		(*stale)++;
	}
	if (a.mode)
		printf("mode %s, ", xr_xdp_mode_name(a.mode));
	qps = qps_in_use(ifname);
	if (qps < 0) {
		printf("maps unreadable\n");
		return 0;
	}
	printf("QPs in use %d", qps);
	if (!xr_xdp_read_engine_port(ifname, &port) && port.active_mtu) {
		printf(", path MTU %u (%s), queues %u", port.active_mtu,
		       report_path_mtu_bound(&port, bound, sizeof(bound)), port.rx_queues);
		if (port.tx_queues != port.rx_queues)
			printf(" (sending on %u)", port.tx_queues);
		printf(", engines %u", port.engines);
	}
	printf("\n");
	return 0;
}

static int cmd_status(void)
{
	int failed, entries, stale = 0;

	failed = for_each_pin_dir("status", print_status, &stale, &entries);
	if (!failed && !entries)
		printf("not attached to any interface\n");
	if (stale)
		printf("%d stale: `xroce attach IFNAME` replaces one, `xroce detach --stale` "
		       "removes them all\n",
		       stale);
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
		return cmd_attach(argc, argv);
	if (!strcmp(cmd, "detach") && argc == 3 && !strcmp(argv[2], "--stale"))
		return cmd_detach_stale();
	if (!strcmp(cmd, "gc")) {
		if (argc != 2) {
			fprintf(stderr, "xroce: gc takes no argument\n%s", usage);
			return 1;
		}
		return cmd_detach_stale();
	}
	if (!strcmp(cmd, "detach"))
		return need_ifname(argc, argv) ?: cmd_detach(argv[2]);
	if (!strcmp(cmd, "stats") || !strcmp(cmd, "qps") || !strcmp(cmd, "gids"))
		return run_report(cmd, argc, argv);
	fprintf(stderr, "xroce: unknown command: %s\n%s", cmd, usage);
	return 1;
}
