// SPDX-License-Identifier: MIT
/*
 * What `xroce stats|qps|gids` and `status --json` print. Every document
 * starts with "schema" and "version"; field names are the counters' names in
 * xroce/xdp_shared.h, and docs/json-output.md describes each of them.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "json.h"
#include "netlink.h"
#include "report.h"
#include "xdp_attach.h"
#include "xroce/wire.h"
#include "xroce/xroce.h"

/* Raised only when a document loses or changes the meaning of a field. */
#define JSON_SCHEMA_VERSION 1

#define WATCH_MIN_SECONDS 0.1
#define WATCH_MAX_SECONDS 86400.0

struct counter {
	const char *name;
	size_t offset;
};

#define COUNTER(type, field)                                                                       \
	{                                                                                          \
#field, offsetof(type, field)                                                      \
	}
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct counter xdp_counters[] = {
    COUNTER(struct xr_xdp_stats, passed_non_roce),
    COUNTER(struct xr_xdp_stats, redirected),
    COUNTER(struct xr_xdp_stats, drop_truncated),
    COUNTER(struct xr_xdp_stats, drop_bad_tver),
    COUNTER(struct xr_xdp_stats, drop_bad_opcode),
    COUNTER(struct xr_xdp_stats, drop_bad_length),
    COUNTER(struct xr_xdp_stats, drop_unknown_qp),
    COUNTER(struct xr_xdp_stats, drop_qp_state),
    COUNTER(struct xr_xdp_stats, drop_no_socket),
    COUNTER(struct xr_xdp_stats, drop_bad_icrc),
    COUNTER(struct xr_xdp_stats, acks_absorbed),
    COUNTER(struct xr_xdp_stats, acks_to_engine),
    COUNTER(struct xr_xdp_stats, dups_answered),
    COUNTER(struct xr_xdp_stats, roce_ipv6),
    COUNTER(struct xr_xdp_stats, drop_bad_qkey),
    COUNTER(struct xr_xdp_stats, drop_mcast_unjoined),
    COUNTER(struct xr_xdp_stats, drop_bad_pkey),
    COUNTER(struct xr_xdp_stats, drop_bad_src),
    COUNTER(struct xr_xdp_stats, drop_bad_dst),
};

#define ENGINE_COUNTER(field) COUNTER(struct xr_engine_stats, field)
static const struct counter engine_counters[] = {
    ENGINE_COUNTER(rx_frames),
    ENGINE_COUNTER(rx_bad_icrc),
    ENGINE_COUNTER(rx_malformed),
    ENGINE_COUNTER(rx_unknown_qp),
    ENGINE_COUNTER(rx_bad_state),
    ENGINE_COUNTER(rx_bad_pkey),
    ENGINE_COUNTER(tx_frames),
    ENGINE_COUNTER(tx_no_buffer),
    ENGINE_COUNTER(retransmits),
    ENGINE_COUNTER(timeouts),
    ENGINE_COUNTER(seq_naks_tx),
    ENGINE_COUNTER(rnr_naks_tx),
    ENGINE_COUNTER(rnr_naks_rx),
    ENGINE_COUNTER(dup_requests),
    ENGINE_COUNTER(seq_naks_rx),
    ENGINE_COUNTER(inv_req_naks_tx),
    ENGINE_COUNTER(inv_req_naks_rx),
    ENGINE_COUNTER(rem_access_naks_tx),
    ENGINE_COUNTER(rem_access_naks_rx),
    ENGINE_COUNTER(rem_op_naks_tx),
    ENGINE_COUNTER(rem_op_naks_rx),
    ENGINE_COUNTER(rx_bad_qkey),
    ENGINE_COUNTER(rx_no_recv),
    ENGINE_COUNTER(uc_dropped_msgs),
    ENGINE_COUNTER(rx_bad_src),
    ENGINE_COUNTER(rx_bad_dst),
    ENGINE_COUNTER(rx_ghost_acks),
    ENGINE_COUNTER(rx_bad_response),
    ENGINE_COUNTER(rx_dup_deferred),
    ENGINE_COUNTER(rx_too_long),
    ENGINE_COUNTER(loopback_frames),
    ENGINE_COUNTER(relay_frames),
    ENGINE_COUNTER(relay_drops),
    ENGINE_COUNTER(syscalls),
    ENGINE_COUNTER(sleeps),
    ENGINE_COUNTER(sleeps_in_flight),
    ENGINE_COUNTER(standby_looks),
    ENGINE_COUNTER(mads_rx),
    ENGINE_COUNTER(mads_tx),
    ENGINE_COUNTER(mads_malformed),
    ENGINE_COUNTER(mads_unserved),
    ENGINE_COUNTER(cm_unmatched),
    ENGINE_COUNTER(cm_forged),
    ENGINE_COUNTER(cm_duplicates),
    ENGINE_COUNTER(cm_retries),
    ENGINE_COUNTER(cm_timeouts),
    ENGINE_COUNTER(cm_listens),
    ENGINE_COUNTER(tail_probes),
    ENGINE_COUNTER(sacks_tx),
    ENGINE_COUNTER(sacks_rx),
    ENGINE_COUNTER(sr_resends),
    ENGINE_COUNTER(sr_placed_ahead),
    ENGINE_COUNTER(sr_unplaced),
    ENGINE_COUNTER(ecn_marked),
    ENGINE_COUNTER(cnps_tx),
    ENGINE_COUNTER(cnps_rx),
};

#define QP_COUNTER(field) COUNTER(struct xr_qp_counters, field)
static const struct counter qp_counters[] = {
    QP_COUNTER(tx_frames),	 QP_COUNTER(retransmits),	 QP_COUNTER(timeouts),
    QP_COUNTER(seq_naks_tx),	 QP_COUNTER(rnr_naks_tx),	 QP_COUNTER(rnr_naks_rx),
    QP_COUNTER(dup_requests),	 QP_COUNTER(seq_naks_rx),	 QP_COUNTER(inv_req_naks_tx),
    QP_COUNTER(inv_req_naks_rx), QP_COUNTER(rem_access_naks_tx), QP_COUNTER(rem_access_naks_rx),
    QP_COUNTER(rem_op_naks_tx),	 QP_COUNTER(rem_op_naks_rx),	 QP_COUNTER(tail_probes),
    QP_COUNTER(sacks_tx),	 QP_COUNTER(sacks_rx),		 QP_COUNTER(sr_resends),
    QP_COUNTER(sr_placed_ahead), QP_COUNTER(ecn_marked),	 QP_COUNTER(cnps_tx),
    QP_COUNTER(cnps_rx),
};

_Static_assert(COUNT_OF(xdp_counters) == sizeof(struct xr_xdp_stats) / sizeof(__u64),
	       "every counter of struct xr_xdp_stats is listed in xdp_counters");
_Static_assert(COUNT_OF(engine_counters) + XR_MAX_ENGINES ==
		   sizeof(struct xr_engine_stats) / sizeof(__u64),
	       "every counter of struct xr_engine_stats is listed in engine_counters");
_Static_assert(COUNT_OF(qp_counters) == sizeof(struct xr_qp_counters) / sizeof(__u64),
	       "every counter of struct xr_qp_counters is listed in qp_counters");

static uint64_t counter_value(const void *base, const struct counter *c)
{
	uint64_t v;

	memcpy(&v, (const char *)base + c->offset, sizeof(v));
	return v;
}

static void json_counters(struct json_writer *w, const char *key, const void *base,
			  const struct counter *counters, size_t n)
{
	json_object_begin(w, key);
	for (size_t i = 0; i < n; i++)
		json_u64(w, counters[i].name, counter_value(base, &counters[i]));
	json_object_end(w);
}

/* The members every document starts with; ifname NULL for documents about all interfaces. */
static void json_document_begin(struct json_writer *w, const char *schema, const char *ifname)
{
	json_object_begin(w, NULL);
	json_string(w, "schema", schema);
	json_u64(w, "version", JSON_SCHEMA_VERSION);
	if (ifname)
		json_string(w, "interface", ifname);
}

/* ---- options ---------------------------------------------------------------- */

static bool looks_numeric(const char *s)
{
	return (*s >= '0' && *s <= '9') || *s == '.';
}

int report_parse_options(const char *cmd, int argc, char **argv, bool allow_watch,
			 struct report_options *o)
{
	*o = (struct report_options){.watch_seconds = 1.0};
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--json")) {
			o->json = true;
		} else if (allow_watch && !strcmp(arg, "--watch")) {
			o->watch = true;
			if (i + 1 < argc && looks_numeric(argv[i + 1])) {
				char *end;
				double s = strtod(argv[++i], &end);

				if (*end || !(s >= WATCH_MIN_SECONDS && s <= WATCH_MAX_SECONDS)) {
					fprintf(stderr,
						"xroce: --watch takes seconds between %g and %g, "
						"not %s\n",
						WATCH_MIN_SECONDS, WATCH_MAX_SECONDS, argv[i]);
					return -EINVAL;
				}
				o->watch_seconds = s;
			}
		} else if (arg[0] == '-') {
			fprintf(stderr, "xroce: %s: unknown option %s\n", cmd, arg);
			return -EINVAL;
		} else if (o->ifname) {
			o->ifname = NULL;
			break;
		} else {
			o->ifname = arg;
		}
	}
	if (!o->ifname) {
		fprintf(stderr, "xroce: %s needs exactly one interface name\n", cmd);
		return -EINVAL;
	}
	return 0;
}

/* ---- stats ------------------------------------------------------------------ */

struct stats_snapshot {
	struct xr_xdp_stats xdp;
	struct xr_engine_stats engine;
};

static int read_snapshot(const char *ifname, struct stats_snapshot *s)
{
	return xr_xdp_read_stats(ifname, &s->xdp) ?: xr_xdp_read_engine_stats(ifname, &s->engine);
}

/* Ends a document: 0, -EIO when stdout failed, or -EINVAL (said so) when the writer was misused. */
static int finish_json(struct json_writer *w)
{
	int err = json_end(w);

	/* Misuse of the writer is a bug here, not something the operator did. */
	if (err == -EINVAL)
		fprintf(stderr, "xroce: internal error: malformed JSON document\n");
	return err;
}

/*
 * The engine threads whose counters are shown: as many as the open engine
 * has, or, after it closed, up to the last that counted anything.
 */
static unsigned engines_shown(const char *ifname, const struct xr_engine_stats *e)
{
	struct xr_engine_port port;
	unsigned n = 1;

	if (!xr_xdp_read_engine_port(ifname, &port) && port.engines &&
	    port.engines <= XR_MAX_ENGINES)
		n = port.engines;
	for (unsigned i = n; i < XR_MAX_ENGINES; i++)
		if (e->rx_by_engine[i])
			n = i + 1;
	return n;
}

static int print_stats_json(const char *ifname, const struct stats_snapshot *s)
{
	unsigned engines = engines_shown(ifname, &s->engine);
	struct json_writer w;

	json_begin(&w, stdout, true);
	json_document_begin(&w, "xroce-stats", ifname);
	json_counters(&w, "xdp", &s->xdp, xdp_counters, COUNT_OF(xdp_counters));
	json_object_begin(&w, "engine");
	for (size_t i = 0; i < COUNT_OF(engine_counters); i++)
		json_u64(&w, engine_counters[i].name,
			 counter_value(&s->engine, &engine_counters[i]));
	json_array_begin(&w, "rx_by_engine");
	for (unsigned i = 0; i < engines; i++)
		json_u64(&w, NULL, s->engine.rx_by_engine[i]);
	json_array_end(&w);
	json_object_end(&w);
	json_object_end(&w);
	return finish_json(&w);
}

static void print_stats_text(const char *ifname, const struct stats_snapshot *s)
{
	unsigned engines = engines_shown(ifname, &s->engine);
	size_t i;

	for (i = 0; i < COUNT_OF(xdp_counters); i++)
		printf("%-16s %llu\n", xdp_counters[i].name,
		       (unsigned long long)counter_value(&s->xdp, &xdp_counters[i]));
	for (i = 0; i < COUNT_OF(engine_counters); i++)
		printf("engine_%-13s %llu\n", engine_counters[i].name,
		       (unsigned long long)counter_value(&s->engine, &engine_counters[i]));
	printf("engine_rx_by_engine ");
	for (unsigned e = 0; e < engines; e++)
		printf(" %llu", (unsigned long long)s->engine.rx_by_engine[e]);
	printf("\n");
}

/* How much a counter grew; one that went backwards was reset (its engine restarted). */
static uint64_t counter_delta(const void *before, const void *after, const struct counter *c)
{
	uint64_t b = counter_value(before, c), a = counter_value(after, c);

	return a >= b ? a - b : a;
}

/* The counters of one group that moved between before and after, as text or JSON. */
static int print_moved(struct json_writer *w, const char *group, const char *prefix,
		       const void *before, const void *after, const struct counter *counters,
		       size_t n, double seconds)
{
	int moved = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t d = counter_delta(before, after, &counters[i]);

		if (!d)
			continue;
		if (w) {
			if (!moved)
				json_object_begin(w, group);
			json_object_begin(w, counters[i].name);
			json_u64(w, "delta", d);
			json_fixed(w, "per_second", (double)d / seconds, 1);
			json_object_end(w);
		} else {
			printf("  %s%-*s %14.1f/s  +%llu\n", prefix, (int)(26 - strlen(prefix)),
			       counters[i].name, (double)d / seconds, (unsigned long long)d);
		}
		moved++;
	}
	if (w && moved)
		json_object_end(w);
	return moved;
}

static int print_interval(const struct report_options *o, unsigned long n, double seconds,
			  const struct stats_snapshot *before, const struct stats_snapshot *after)
{
	struct json_writer w;
	int moved;

	if (!o->json) {
		printf("interval %lu, %.3f s:\n", n, seconds);
		moved = print_moved(NULL, "xdp", "", &before->xdp, &after->xdp, xdp_counters,
				    COUNT_OF(xdp_counters), seconds);
		moved += print_moved(NULL, "engine", "engine_", &before->engine, &after->engine,
				     engine_counters, COUNT_OF(engine_counters), seconds);
		if (!moved)
			printf("  no counter moved\n");
		return fflush(stdout) ? -errno : 0;
	}
	/* One line per interval, so that a reader can take each as it comes. */
	json_begin(&w, stdout, false);
	json_document_begin(&w, "xroce-stats-watch", o->ifname);
	json_u64(&w, "interval", n);
	json_fixed(&w, "seconds", seconds, 3);
	print_moved(&w, "xdp", "", &before->xdp, &after->xdp, xdp_counters, COUNT_OF(xdp_counters),
		    seconds);
	print_moved(&w, "engine", "", &before->engine, &after->engine, engine_counters,
		    COUNT_OF(engine_counters), seconds);
	json_object_end(&w);
	return finish_json(&w);
}

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static struct timespec timespec_add(struct timespec t, double seconds)
{
	time_t whole = (time_t)seconds; /* seconds > 0 */

	t.tv_sec += whole;
	t.tv_nsec += (long)((seconds - (double)whole) * 1e9);
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/*
 * Waits until deadline (CLOCK_MONOTONIC) with SIGINT and SIGTERM blocked, so
 * that a signal can neither be lost between two checks nor kill the process:
 * true when one of them arrived.
 */
static bool wait_or_stop(const sigset_t *stop, const struct timespec *deadline)
{
	for (;;) {
		struct timespec now, left;
		double s;

		clock_gettime(CLOCK_MONOTONIC, &now);
		s = seconds_between(&now, deadline);
		if (s <= 0)
			return sigtimedwait(stop, NULL, &(struct timespec){0}) > 0;
		left.tv_sec = (time_t)s;
		left.tv_nsec = (long)((s - (double)left.tv_sec) * 1e9);
		if (sigtimedwait(stop, NULL, &left) > 0)
			return true;
		if (errno != EINTR) /* EAGAIN: the deadline */
			return false;
	}
}

static int watch_stats(const struct report_options *o)
{
	struct stats_snapshot before, after;
	struct timespec then, now, deadline;
	sigset_t stop;
	unsigned long n;
	int err;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &stop, NULL))
		return -errno;
	/* An inherited SIG_IGN (a script's `xroce ... &`) would discard them even while blocked. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	err = read_snapshot(o->ifname, &before);
	clock_gettime(CLOCK_MONOTONIC, &then);
	if (!err && !o->json) {
		printf("xroce stats %s every %g s: per-second rates of the counters that moved "
		       "(Ctrl-C ends)\n",
		       o->ifname, o->watch_seconds);
		err = fflush(stdout) ? -errno : 0;
	}
	deadline = timespec_add(then, o->watch_seconds);
	for (n = 1; !err && !wait_or_stop(&stop, &deadline); n++) {
		err = read_snapshot(o->ifname, &after);
		if (err)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		err = print_interval(o, n, seconds_between(&then, &now), &before, &after);
		before = after;
		then = now;
		deadline = timespec_add(deadline, o->watch_seconds);
		/* Fell behind by more than an interval (stopped, swapped): restart the beat. */
		if (seconds_between(&now, &deadline) < 0)
			deadline = timespec_add(now, o->watch_seconds);
	}
	/*
	 * They stay blocked: a second one (timeout(1) signals the process group
	 * too) must not kill the process on its way out.
	 */
	return err;
}

int report_stats(const struct report_options *o)
{
	struct stats_snapshot s;
	int err;

	if (o->watch)
		return watch_stats(o);
	err = read_snapshot(o->ifname, &s);
	if (err)
		return err;
	if (o->json)
		return print_stats_json(o->ifname, &s);
	print_stats_text(o->ifname, &s);
	return 0;
}

/* ---- qps -------------------------------------------------------------------- */

static const char *const xdp_state_names[] = {"none", "active", "closed"};
static const char *const qp_state_names[] = {"reset", "init", "rtr", "rts", "sqd", "sqe", "err"};

static const char *name_of(const char *const *names, size_t n, uint32_t value)
{
	return value < n ? names[value] : "unknown";
}

static const char *qp_type_name(uint32_t type)
{
	switch (type) {
	case XR_QPT_RC:
		return "rc";
	case XR_QPT_UC:
		return "uc";
	case XR_QPT_UD:
		return "ud";
	default:
		return "unknown";
	}
}

/*
 * A copy of a live entry: each PSN/MSN pair whole, and the acknowledged PSN
 * read before the next PSN to send, so that it is never ahead of it. The
 * counters may be a round apart.
 */
static void snapshot_entry(const struct xr_qp_entry *live, struct xr_qp_entry *copy)
{
	*copy = *live;
	copy->committed = __atomic_load_n(&live->committed, __ATOMIC_ACQUIRE);
	copy->xdp_ack = __atomic_load_n(&live->xdp_ack, __ATOMIC_ACQUIRE);
	copy->req_next_psn = __atomic_load_n(&live->req_next_psn, __ATOMIC_ACQUIRE);
}

static void json_qp(struct json_writer *w, const struct xr_qp_entry *e)
{
	json_object_begin(w, NULL);
	json_u64(w, "qpn", e->qpn);
	json_string(w, "state", name_of(qp_state_names, COUNT_OF(qp_state_names), e->qp_state));
	json_string(w, "xdp_state", name_of(xdp_state_names, COUNT_OF(xdp_state_names), e->state));
	json_string(w, "type", qp_type_name(e->qp_type));
	json_u64(w, "dest_qpn", e->dest_qpn);
	json_u64(w, "udp_sport", e->udp_sport);
	json_u64(w, "next_psn", e->req_next_psn);
	json_u64(w, "acked_psn", e->xdp_ack & XR_PSN_MASK);
	json_u64(w, "expected_psn", e->committed & XR_PSN_MASK);
	json_u64(w, "msn", e->committed >> 32);
	json_u64(w, "srtt_us", e->srtt_us);
	json_u64(w, "rttvar_us", e->rttvar_us);
	json_u64(w, "cwnd", e->cwnd);
	json_u64(w, "rate_mbps", e->rate_mbps);
	json_bool(w, "sr_requester", e->sr_flags & XR_QP_SR_REQUESTER);
	json_bool(w, "sr_responder", e->sr_flags & XR_QP_SR_RESPONDER);
	json_bool(w, "engine_sleeping", e->engine_sleeping);
	json_bool(w, "xdp_absorbs_acks", e->fast_path & XR_XDP_FAST_ACK);
	json_bool(w, "xdp_answers_dups", e->fast_path & XR_XDP_FAST_DUP);
	json_object_begin(w, "counters");
	json_u64(w, "rx_frames", e->rx_frames);
	json_u64(w, "acks_absorbed", e->acks_absorbed);
	json_u64(w, "dups_answered", e->dups_answered);
	for (size_t i = 0; i < COUNT_OF(qp_counters); i++)
		json_u64(w, qp_counters[i].name, counter_value(&e->counters, &qp_counters[i]));
	json_object_end(w);
	json_object_end(w);
}

/* Which ends of a QP speak selective repeat: "req", "resp", both, or "-". */
static const char *sr_text(uint32_t flags)
{
	static const char *const names[] = {"-", "req", "resp", "req+resp"};

	return names[flags & (XR_QP_SR_REQUESTER | XR_QP_SR_RESPONDER)];
}

static void print_qp_text(const struct xr_qp_entry *e, bool first)
{
	char rate[16] = "-";

	/* DCQCN's pace in Mb/s, "-" when it does not limit the QP. */
	if (e->rate_mbps)
		snprintf(rate, sizeof(rate), "%u", e->rate_mbps);
	if (first)
		printf("%-8s %-4s %-6s %-8s %-15s %-8s %-8s %10s %10s %8s %8s %9s %9s %8s %8s "
		       "%5s %-8s %7s\n",
		       "qpn", "type", "state", "dest", "expected/msn", "acked", "next", "rx", "tx",
		       "retrans", "timeouts", "acks_xdp", "dups_xdp", "srtt_us", "rttvar", "cwnd",
		       "sr", "rate");
	printf("0x%06x %-4s %-6s 0x%06x 0x%06x/%-6u 0x%06x 0x%06x %10llu %10llu %8llu %8llu %9llu "
	       "%9llu %8u %8u %5u %-8s %7s\n",
	       e->qpn, qp_type_name(e->qp_type),
	       name_of(qp_state_names, COUNT_OF(qp_state_names), e->qp_state), e->dest_qpn,
	       (unsigned)(e->committed & XR_PSN_MASK), (unsigned)(e->committed >> 32),
	       (unsigned)(e->xdp_ack & XR_PSN_MASK), e->req_next_psn,
	       (unsigned long long)e->rx_frames, (unsigned long long)e->counters.tx_frames,
	       (unsigned long long)e->counters.retransmits,
	       (unsigned long long)e->counters.timeouts, (unsigned long long)e->acks_absorbed,
	       (unsigned long long)e->dups_answered, e->srtt_us, e->rttvar_us, e->cwnd,
	       sr_text(e->sr_flags), rate);
}

int report_qps(const struct report_options *o)
{
	struct json_writer w;
	struct xr_xdp_handle h;
	int err, shown = 0;

	err = xr_xdp_open(o->ifname, &h);
	if (err)
		return err;
	if (o->json) {
		json_begin(&w, stdout, true);
		json_document_begin(&w, "xroce-qps", o->ifname);
		json_array_begin(&w, "qps");
	}
	for (uint32_t i = 0; i < XR_MAX_QP; i++) {
		struct xr_qp_entry e;

		if (__atomic_load_n(&h.qp_table[i].state, __ATOMIC_ACQUIRE) == XR_XDP_QP_NONE)
			continue;
		snapshot_entry(&h.qp_table[i], &e);
		if (o->json)
			json_qp(&w, &e);
		else
			print_qp_text(&e, !shown);
		shown++;
	}
	xr_xdp_close(&h);
	if (o->json) {
		json_array_end(&w);
		json_object_end(&w);
		return finish_json(&w);
	}
	if (!shown)
		printf("no queue pairs open on %s\n", o->ifname);
	return 0;
}

/* ---- gids ------------------------------------------------------------------- */

static bool gid_is_v4mapped(const union xr_gid *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

static void format_gid(const union xr_gid *gid, char *out)
{
	for (int b = 0; b < 16; b += 2)
		out += sprintf(out, "%02x%02x%s", gid->raw[b], gid->raw[b + 1], b < 14 ? ":" : "");
}

int report_gids(const struct report_options *o)
{
	union xr_gid gids[XR_MAX_GIDS];
	struct xr_netdev_info info;
	char text[40], address[INET6_ADDRSTRLEN];
	struct json_writer w;
	int n, err;

	err = xr_nl_get_link(o->ifname, &info);
	if (err)
		return err;
	n = xr_nl_get_gids(info.ifindex, info.mac, gids, XR_MAX_GIDS);
	if (n < 0)
		return n;
	if (o->json) {
		json_begin(&w, stdout, true);
		json_document_begin(&w, "xroce-gids", o->ifname);
		json_array_begin(&w, "gids");
	}
	for (int i = 0; i < n; i++) {
		bool v4 = gid_is_v4mapped(&gids[i]);

		format_gid(&gids[i], text);
		if (!o->json) {
			printf("%d %s\n", i, text);
			continue;
		}
		inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? gids[i].raw + 12 : gids[i].raw, address,
			  sizeof(address));
		json_object_begin(&w, NULL);
		json_u64(&w, "index", i);
		json_string(&w, "gid", text);
		json_string(&w, "family", v4 ? "ipv4" : "ipv6");
		json_string(&w, "address", address);
		json_object_end(&w);
	}
	if (!o->json)
		return 0;
	json_array_end(&w);
	json_object_end(&w);
	return finish_json(&w);
}

/* ---- status --json ---------------------------------------------------------- */

const char *report_path_mtu_bound(const struct xr_engine_port *p, char *buf, size_t size)
{
	if (p->interface_bound)
		snprintf(buf, size, "interface MTU %u", p->netdev_mtu);
	else if (p->multi_buffer)
		snprintf(buf, size, "multi-buffer sockets, frames up to %u bytes", p->max_frame);
	else if (p->multi_buffer_error)
		snprintf(buf, size, "multi-buffer sockets refused: %s",
			 strerror(-p->multi_buffer_error));
	else
		snprintf(buf, size, "single-buffer sockets, frames up to %u bytes", p->max_frame);
	return buf;
}

/* The path MTU of the engine that owns ifname, when one does. */
static void json_engine_port(struct json_writer *w, const char *ifname)
{
	struct xr_engine_port p;
	char bound[96];

	if (xr_xdp_read_engine_port(ifname, &p) || !p.active_mtu)
		return;
	json_u64(w, "path_mtu", p.active_mtu);
	json_string(w, "path_mtu_bound", report_path_mtu_bound(&p, bound, sizeof(bound)));
	json_bool(w, "multi_buffer", p.multi_buffer);
	json_u64(w, "max_frame", p.max_frame);
	json_u64(w, "rx_queues", p.rx_queues);
	json_u64(w, "tx_queues", p.tx_queues);
	json_u64(w, "engines", p.engines);
}

static unsigned int qps_in_use(const struct xr_xdp_handle *h)
{
	unsigned int qps = 0;

	for (uint32_t i = 0; i < XR_MAX_QP; i++)
		qps += h->qp_table[i].state != XR_XDP_QP_NONE;
	return qps;
}

/*
 * Lists ifname's attachment; one detached while this ran is left out.
 * Returns whether it could be read.
 */
static bool json_attachment(struct json_writer *w, const char *ifname)
{
	struct xr_xdp_attachment a;
	struct xr_xdp_handle h;
	char dir[PATH_MAX];
	int err;

	err = xr_xdp_inspect(ifname, &a);
	if (!err && a.state == XR_XDP_NOT_ATTACHED)
		return true;
	snprintf(dir, sizeof(dir), "%s/%s", XR_PIN_ROOT, ifname);
	json_object_begin(w, NULL);
	json_string(w, "interface", ifname);
	json_string(w, "pin_dir", dir);
	if (err) {
		fprintf(stderr, "xroce: status %s: %s\n", ifname, xr_strerror(err));
		json_string(w, "error", xr_strerror(err));
		json_object_end(w);
		return false;
	}
	json_string(w, "state", xr_xdp_state_name(a.state));
	if (xr_xdp_state_is_stale(a.state))
		json_string(w, "stale_reason", xr_xdp_stale_reason(a.state));
	json_u64(w, "prog_id", a.prog_id);
	json_u64(w, "link_id", a.link_id);
	/* A link whose interface has gone (its namespace deleted) reports ifindex 0. */
	json_u64(w, "ifindex", a.ifindex);
	json_bool(w, "interface_present", a.ifindex != 0);
	json_string(w, "mode", xr_xdp_mode_name(a.mode));
	if (!xr_xdp_open(ifname, &h)) {
		json_u64(w, "qps_in_use", qps_in_use(&h));
		xr_xdp_close(&h);
	}
	json_engine_port(w, ifname);
	json_object_end(w);
	return true;
}

int report_status_json(void)
{
	struct json_writer w;
	struct dirent *entry;
	bool all_read = true;
	DIR *dir;
	int err;

	dir = opendir(XR_PIN_ROOT);
	if (!dir && errno != ENOENT) {
		if (errno == EACCES || errno == EPERM)
			fprintf(stderr, "xroce: not permitted (run as root)\n");
		else
			fprintf(stderr, "xroce: status %s: %s\n", XR_PIN_ROOT, strerror(errno));
		return 1;
	}
	json_begin(&w, stdout, true);
	json_document_begin(&w, "xroce-status", NULL);
	json_array_begin(&w, "attachments");
	while (dir && (entry = readdir(dir))) {
		if (entry->d_name[0] != '.')
			all_read &= json_attachment(&w, entry->d_name);
	}
	if (dir)
		closedir(dir);
	json_array_end(&w);
	json_object_end(&w);
	err = finish_json(&w);
	if (err == -EIO)
		fprintf(stderr, "xroce: status: %s\n", strerror(EIO));
	return err || !all_read;
}
