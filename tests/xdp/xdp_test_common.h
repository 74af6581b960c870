/* SPDX-License-Identifier: MIT */
/*
 * Shared plumbing of the tests that run the XDP program with
 * BPF_PROG_TEST_RUN (no attach): loading it, its per-CPU counters and
 * qp_table, one test run with the counters' deltas, and an AF_XDP socket on
 * lo of a private network namespace for the redirect cases. Header-only;
 * every helper is static inline. The loaded program is in xt.
 */
#ifndef XROCE_TESTS_XDP_TEST_COMMON_H
#define XROCE_TESTS_XDP_TEST_COMMON_H

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "xroce/xdp_shared.h"
#include "xroce_xdp.skel.h"

static const char *const xt_counter_names[] = {
    "passed_non_roce",	   "redirected",      "drop_truncated", "drop_bad_tver",  "drop_bad_opcode",
    "drop_bad_length",	   "drop_unknown_qp", "drop_qp_state",	"drop_no_socket", "drop_bad_icrc",
    "acks_absorbed",	   "acks_to_engine",  "dups_answered",	"roce_ipv6",	  "drop_bad_qkey",
    "drop_mcast_unjoined", "drop_bad_pkey",   "drop_bad_src",	"drop_bad_dst",
};

/* Counters are indexed as the u64 fields of struct xr_xdp_stats, in order. */
#define XT_COUNTER_INDEX(field) (offsetof(struct xr_xdp_stats, field) / sizeof(__u64))
#define XT_NCOUNTERS (sizeof(struct xr_xdp_stats) / sizeof(__u64))
_Static_assert(sizeof(xt_counter_names) / sizeof(xt_counter_names[0]) == XT_NCOUNTERS,
	       "a name for every counter");

static struct {
	const char *test_name; /* prefix of the messages that end the test */
	struct xroce_xdp_bpf *skel;
	int prog_fd, stats_fd, qp_fd, xsk_map_fd;
	int ncpus;
} xt;

static inline int xt_libbpf_warnings_only(enum libbpf_print_level level, const char *fmt,
					  va_list args)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, args) : 0;
}

/* Loads the program into xt; 0, or -1 after saying why. */
static inline int xt_load(const char *test_name)
{
	xt.test_name = test_name;
	libbpf_set_print(xt_libbpf_warnings_only);
	if (geteuid() != 0) {
		fprintf(stderr, "%s: needs root to load BPF programs\n", test_name);
		return -1;
	}
	xt.ncpus = libbpf_num_possible_cpus();
	xt.skel = xroce_xdp_bpf__open_and_load();
	if (xt.ncpus <= 0 || !xt.skel) {
		fprintf(stderr, "%s: loading the XDP program: %s\n", test_name, strerror(errno));
		return -1;
	}
	xt.prog_fd = bpf_program__fd(xt.skel->progs.xroce_xdp);
	xt.stats_fd = bpf_map__fd(xt.skel->maps.stats);
	xt.qp_fd = bpf_map__fd(xt.skel->maps.qp_table);
	xt.xsk_map_fd = bpf_map__fd(xt.skel->maps.xsk_map);
	return 0;
}

/* Unloads the program and says how the cases went; main's exit status. */
static inline int xt_finish(int failures)
{
	xroce_xdp_bpf__destroy(xt.skel);
	if (failures) {
		printf("%d case(s) failed\n", failures);
		return 1;
	}
	printf("all cases passed\n");
	return 0;
}

static inline void xt_read_counters(__u64 out[XT_NCOUNTERS])
{
	struct xr_xdp_stats per_cpu[xt.ncpus];
	__u32 zero = 0;
	size_t i;
	int cpu;

	memset(out, 0, XT_NCOUNTERS * sizeof(__u64));
	if (bpf_map_lookup_elem(xt.stats_fd, &zero, per_cpu)) {
		fprintf(stderr, "%s: reading stats: %s\n", xt.test_name, strerror(errno));
		exit(1);
	}
	for (cpu = 0; cpu < xt.ncpus; cpu++)
		for (i = 0; i < XT_NCOUNTERS; i++)
			out[i] += ((__u64 *)&per_cpu[cpu])[i];
}

static inline struct xr_qp_entry xt_get_entry(__u32 qpn)
{
	struct xr_qp_entry e;
	__u32 slot = xr_qp_table_slot(qpn);

	if (bpf_map_lookup_elem(xt.qp_fd, &slot, &e)) {
		fprintf(stderr, "%s: reading qp_table: %s\n", xt.test_name, strerror(errno));
		exit(1);
	}
	return e;
}

static inline void xt_put_entry(__u32 qpn, const struct xr_qp_entry *e)
{
	__u32 slot = xr_qp_table_slot(qpn);

	if (bpf_map_update_elem(xt.qp_fd, &slot, e, BPF_ANY)) {
		fprintf(stderr, "%s: writing qp_table: %s\n", xt.test_name, strerror(errno));
		exit(1);
	}
}

static inline const char *xt_action_name(__u32 action)
{
	static const char *const names[] = {"XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX",
					    "XDP_REDIRECT"};

	return action < sizeof(names) / sizeof(names[0]) ? names[action] : "XDP_?";
}

/*
 * Runs the program once on len bytes of data, the frame it leaves in out
 * (*out_len bytes, at most out_size). Checks that it returned expect_action
 * and that exactly the counters in expect_counters (a mask of
 * 1 << XT_COUNTER_INDEX) moved, each by one. Returns the action; why is empty
 * when all was as expected, else says what was not.
 */
static inline __u32 xt_run(const void *data, size_t len, void *out, size_t out_size,
			   size_t *out_len, __u32 expect_action, __u32 expect_counters, char *why,
			   size_t why_size)
{
	__u64 before[XT_NCOUNTERS], after[XT_NCOUNTERS];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = data, .data_size_in = len, .data_out = out,
		    .data_size_out = out_size, .repeat = 1);
	size_t i;

	why[0] = '\0';
	*out_len = 0;
	xt_read_counters(before);
	if (bpf_prog_test_run_opts(xt.prog_fd, &opts)) {
		snprintf(why, why_size, "test run failed: %s", strerror(errno));
		return XDP_ABORTED;
	}
	xt_read_counters(after);
	*out_len = opts.data_size_out;
	if (opts.retval != expect_action)
		snprintf(why, why_size, "returned %s, expected %s", xt_action_name(opts.retval),
			 xt_action_name(expect_action));
	for (i = 0; i < XT_NCOUNTERS && !why[0]; i++) {
		__u64 want = (expect_counters >> i) & 1;

		if (after[i] - before[i] != want)
			snprintf(why, why_size, "%s moved by %llu, expected %llu",
				 xt_counter_names[i], (unsigned long long)(after[i] - before[i]),
				 (unsigned long long)want);
	}
	return opts.retval;
}

/* lo of a private namespace can hold an AF_XDP socket in copy mode. */
static inline int xt_bring_up_lo(void)
{
	struct ifreq ifr = {0};
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			err = -errno;
	} else {
		err = -errno;
	}
	close(fd);
	return err;
}

/*
 * Moves this process into a new network namespace, binds an AF_XDP socket to
 * its lo, puts it in the XSKMAP slot of queue 0 and runs cases; then closes
 * the socket. Returns 0, or -errno when the socket could not be set up (and
 * cases did not run).
 */
static inline int xt_with_socket_on_lo(void (*cases)(void))
{
	const size_t umem_size = 64 * XSK_UMEM__DEFAULT_FRAME_SIZE;
	struct xsk_socket_config cfg = {
	    .rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
	    .tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS,
	    .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	    .bind_flags = XDP_COPY,
	};
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	struct xsk_socket *xsk = NULL;
	struct xsk_umem *umem = NULL;
	__u32 queue = 0;
	void *area;
	int fd, err;

	area = mmap(NULL, umem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return -errno;
	err = unshare(CLONE_NEWNET) ? -errno : xt_bring_up_lo();
	if (!err)
		err = xsk_umem__create(&umem, area, umem_size, &fill, &comp, NULL);
	if (!err)
		err = xsk_socket__create(&xsk, "lo", queue, umem, &rx, &tx, &cfg);
	if (!err) {
		fd = xsk_socket__fd(xsk);
		if (bpf_map_update_elem(xt.xsk_map_fd, &queue, &fd, BPF_ANY))
			err = -errno;
	}
	if (!err)
		cases();
	if (xsk)
		xsk_socket__delete(xsk);
	if (umem)
		xsk_umem__delete(umem);
	munmap(area, umem_size);
	return err;
}

#endif
