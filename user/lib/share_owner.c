// SPDX-License-Identifier: MIT
/* The owner's side of a shared device (share.h): guests' frames in and out. */
#include <errno.h>
#include <net/ethernet.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "share.h"

/* Frames taken from one guest per round, so that no guest starves the rest. */
#define GUEST_BATCH 64
/*
 * What the owner may have queued to one guest: frames beyond it are lost,
 * as on a congested wire, and the transport sends them again.
 */
#define GUEST_SNDBUF (4 << 20)
/*
 * While the engine spins, how often it looks for a new guest: accept() is a
 * system call that allocates a socket even when nobody waits. A sleeping
 * engine learns of a guest from poll() at once.
 */
#define ACCEPT_INTERVAL_NS 1000000ull

struct xr_share_owner {
	int listen_fd;
	int guest_fd[XR_SHARE_MAX_GUESTS]; /* by holder - 1; -1 when free */
	unsigned nguests;
	uint64_t next_accept_ns;
	int guest_waiting; /* atomic: poll() saw the listening socket readable */
};

int xr_share_address(const char *ifname, struct sockaddr_un *addr, socklen_t *len)
{
	int n;

	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	/* Abstract (sun_path[0] is 0): the network namespace's own, like ifname. */
	n = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, "xroce/%s", ifname);
	if (n < 0 || (size_t)n >= sizeof(addr->sun_path) - 1)
		return -ENAMETOOLONG;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

int xr_share_owner_open(struct xr_device *dev, uint64_t deadline_ns)
{
	struct xr_share_owner *so = calloc(1, sizeof(*so));
	struct timespec pause = {0, 1000000};
	struct sockaddr_un addr;
	socklen_t len;
	int err;

	if (!so)
		return -ENOMEM;
	so->listen_fd = -1;
	for (int i = 0; i < XR_SHARE_MAX_GUESTS; i++)
		so->guest_fd[i] = -1;
	dev->share_owner = so;
	err = xr_share_address(dev->ifname, &addr, &len);
	if (err)
		return err;
	so->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (so->listen_fd < 0)
		return -errno;
	/* An owner that was exiting when we took its lock may still hold the name. */
	while (bind(so->listen_fd, (struct sockaddr *)&addr, len)) {
		if (errno != EADDRINUSE || xr_now_ns() >= deadline_ns)
			return errno == EADDRINUSE ? -EBUSY : -errno;
		nanosleep(&pause, NULL);
	}
	return listen(so->listen_fd, XR_SHARE_MAX_GUESTS) ? -errno : 0;
}

void xr_share_owner_close(struct xr_device *dev)
{
	struct xr_share_owner *so = dev->share_owner;

	if (!so)
		return;
	for (int i = 0; i < XR_SHARE_MAX_GUESTS; i++)
		if (so->guest_fd[i] >= 0)
			close(so->guest_fd[i]);
	if (so->listen_fd >= 0)
		close(so->listen_fd);
	free(so);
	dev->share_owner = NULL;
}

/*
 * A guest hung up (closed the device, or died with QPs open): its QPs are
 * gone, and XDP must stop steering frames to them.
 */
static void drop_guest(struct xr_device *dev, int holder)
{
	struct xr_share_owner *so = dev->share_owner;

	close(so->guest_fd[holder - 1]);
	so->guest_fd[holder - 1] = -1;
	so->nguests--;
	for (uint32_t slot = 0; slot < XR_MAX_QP; slot++) {
		struct xr_qp_entry *e = &dev->xdp.qp_table[slot];

		if (e->holder == holder &&
		    __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != XR_XDP_QP_NONE) {
			e->holder = 0;
			__atomic_store_n(&e->state, XR_XDP_QP_NONE, __ATOMIC_SEQ_CST);
		}
	}
}

static void take_guest(struct xr_device *dev, int fd)
{
	struct xr_share_owner *so = dev->share_owner;
	struct xr_share_hello hello = {.magic = XR_SHARE_MAGIC, .version = XR_SHARE_VERSION};
	int sndbuf = GUEST_SNDBUF, i;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	/* Only root and our own user may have their frames sent as ours. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != 0 && cred.uid != geteuid()))
		goto refuse;
	for (i = 0; i < XR_SHARE_MAX_GUESTS && so->guest_fd[i] >= 0; i++)
		;
	if (i == XR_SHARE_MAX_GUESTS)
		goto refuse;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	hello.holder = (uint16_t)(i + 1);
	if (send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(hello))
		goto refuse;
	so->guest_fd[i] = fd;
	so->nguests++;
	return;
refuse:
	/* Holder 0 says so: a hang-up alone would look like an owner that went. */
	send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

bool xr_share_owner_rx_foreign(void *ctx, const uint8_t *frame, uint32_t len, uint32_t dqpn)
{
	struct xr_device *dev = ctx;
	struct xr_share_owner *so = dev->share_owner;
	const struct xr_qp_entry *e = &dev->xdp.qp_table[xr_qp_table_slot(dqpn)];
	int holder;

	if (!so || !so->nguests || __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == XR_XDP_QP_NONE ||
	    e->qpn != dqpn)
		return false;
	holder = e->holder;
	if (holder <= 0 || holder > XR_SHARE_MAX_GUESTS || so->guest_fd[holder - 1] < 0)
		return false;
	xr_count_syscalls(dev, 1);
	if (send(so->guest_fd[holder - 1], frame, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
		dev->core.stats.relay_frames++;
	else
		dev->core.stats.relay_drops++;
	return true;
}

/*
 * A guest's frames, each received straight into a transmit buffer: sent on
 * the wire, or delivered here when it is for this device. While the wire
 * has no buffer free, they wait in the guest's socket.
 */
static unsigned take_frames(struct xr_device *dev, int holder, uint64_t now)
{
	int fd = dev->share_owner->guest_fd[holder - 1];
	unsigned n = 0;

	while (n < GUEST_BATCH) {
		uint32_t cap;
		uint8_t *buf = xr_xsk_port_tx_alloc(dev->port, &cap);
		ssize_t len;

		if (!buf)
			break;
		xr_count_syscalls(dev, 1);
		len = recv(fd, buf, cap, MSG_DONTWAIT | MSG_TRUNC);
		if (len <= 0) {
			xr_xsk_port_tx_abort(dev->port, buf);
			if (!len || (errno != EAGAIN && errno != EINTR))
				drop_guest(dev, holder);
			break;
		}
		n++;
		if ((size_t)len > cap || len < ETH_HLEN) {
			dev->core.stats.relay_drops++;
			xr_xsk_port_tx_abort(dev->port, buf);
			continue;
		}
		dev->core.stats.relay_frames++;
		if (xr_loopback_is_own(dev, buf, (uint32_t)len)) {
			xr_core_rx(&dev->core, buf, (uint32_t)len, XR_RX_NO_QUEUE, now);
			xr_xsk_port_tx_abort(dev->port, buf);
		} else {
			xr_xsk_port_tx_submit(dev->port, 0, buf, (uint32_t)len);
			dev->core
			    .tx_urgent++; /* a guest's frame leaves now: held ACKs go with it */
		}
	}
	return n;
}

unsigned xr_share_owner_poll(struct xr_device *dev, uint64_t now)
{
	struct xr_share_owner *so = dev->share_owner;
	unsigned n = 0;
	int fd;

	if (!so)
		return 0;
	if (__atomic_exchange_n(&so->guest_waiting, 0, __ATOMIC_RELAXED) ||
	    now >= so->next_accept_ns) {
		so->next_accept_ns = now + ACCEPT_INTERVAL_NS;
		do {
			xr_count_syscalls(dev, 1);
			fd = accept4(so->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd >= 0)
				take_guest(dev, fd);
		} while (fd >= 0);
	}
	for (int i = 0; i < XR_SHARE_MAX_GUESTS && so->nguests; i++)
		if (so->guest_fd[i] >= 0)
			n += take_frames(dev, i + 1, now);
	return n;
}

int xr_share_owner_pollfds(const struct xr_device *dev, struct pollfd *pfd, int max)
{
	const struct xr_share_owner *so = dev->share_owner;
	int n = 0;

	if (!so || max < 1)
		return 0;
	pfd[n++] = (struct pollfd){.fd = so->listen_fd, .events = POLLIN};
	for (int i = 0; i < XR_SHARE_MAX_GUESTS && n < max; i++)
		if (so->guest_fd[i] >= 0)
			pfd[n++] = (struct pollfd){.fd = so->guest_fd[i], .events = POLLIN};
	return n;
}

void xr_share_owner_polled(struct xr_device *dev, const struct pollfd *pfd)
{
	struct xr_share_owner *so = dev->share_owner;

	if (so && (pfd[0].revents & POLLIN))
		__atomic_store_n(&so->guest_waiting, 1, __ATOMIC_RELAXED);
}
