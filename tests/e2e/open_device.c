// SPDX-License-Identifier: MIT
/*
 * open_device IFNAME [--no-attach] [--hold]: opens IFNAME's xroce device as
 * an application does and says how it went, for the shell tests of
 * attachments (tests/e2e/test_stale.sh).
 *   success: prints "opened IFNAME", closes the device (or with --hold
 *            waits for a signal first, for a test to kill it), exits 0;
 *   failure: prints "open IFNAME: errno N: MESSAGE" with xr_strerror's
 *            message, as the tools do, and exits 1.
 * --no-attach opens with attach_if_needed 0 (never attach).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xroce/xroce.h"

int main(int argc, char **argv)
{
	struct xr_device_open_attr attr = {.attach_if_needed = 1};
	struct xr_device *dev;
	bool hold = false;
	sigset_t stop;
	int i, sig;

	if (argc < 2) {
		fprintf(stderr, "usage: open_device IFNAME [--no-attach] [--hold]\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--no-attach")) {
			attr.attach_if_needed = 0;
		} else if (!strcmp(argv[i], "--hold")) {
			hold = true;
		} else {
			fprintf(stderr, "open_device: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	/* Blocked before the device exists, so that sigwait sees them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);

	dev = xr_open_device(argv[1], &attr);
	if (!dev) {
		int err = errno;

		printf("open %s: errno %d: %s\n", argv[1], err, xr_strerror(err));
		return 1;
	}
	printf("opened %s\n", argv[1]);
	fflush(stdout);
	if (hold)
		sigwait(&stop, &sig);
	return xr_close_device(dev) ? 1 : 0;
}
