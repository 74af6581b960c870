/* SPDX-License-Identifier: MIT */
/*
 * The loader's reporting commands: stats (once or --watch), qps, gids and
 * status --json, as text or as the JSON documents of docs/json-output.md.
 * They print nothing on failure and return a negative errno, which the
 * caller turns into the one-line error message.
 */
#ifndef XROCE_LOADER_REPORT_H
#define XROCE_LOADER_REPORT_H

#include <stdbool.h>
#include <stddef.h>

struct report_options {
	const char *ifname;
	bool json;
	bool watch;
	double watch_seconds; /* interval of --watch */
};

/*
 * Parses the words after the command: IFNAME and --json, and --watch
 * [SECONDS] when allow_watch. Prints what is wrong and returns -EINVAL.
 */
int report_parse_options(const char *cmd, int argc, char **argv, bool allow_watch,
			 struct report_options *o);

/* --watch runs until SIGINT or SIGTERM, then returns 0 with both left blocked. */
int report_stats(const struct report_options *o);
int report_qps(const struct report_options *o);
int report_gids(const struct report_options *o);

/*
 * `status --json`: every attachment under XR_PIN_ROOT as one JSON document.
 * Says on stderr what it could not read (an attachment that cannot be read is
 * listed with an "error" member) and returns the exit status, 0 or 1.
 */
int report_status_json(void);

struct xr_engine_port;
/*
 * What bounds the path MTU of an engine's port, in words: the interface's
 * MTU, or what its AF_XDP sockets carry (and why). Writes into buf.
 */
const char *report_path_mtu_bound(const struct xr_engine_port *p, char *buf, size_t size);

#endif /* XROCE_LOADER_REPORT_H */
