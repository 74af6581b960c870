// SPDX-License-Identifier: MIT
/* A guest's side of a shared device (share.h): its frames go through the owner. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "share.h"

#define RX_BATCH 64
/*
 * How long a frame waits for room towards the owner, which takes them as
 * fast as its wire does: past this it is lost, as on a congested wire.
 */
#define SEND_TIMEOUT_US 100000

struct xr_share_guest {
	int fd;
	uint16_t holder;
	uint8_t tx_buf[XR_SHARE_FRAME_CAP]; /* the core builds one frame at a time */
	uint8_t rx_buf[XR_SHARE_FRAME_CAP];
};

static struct timeval timeval_of_us(uint64_t us)
{
	return (struct timeval){.tv_sec = (time_t)(us / 1000000), .tv_usec = (long)(us % 1000000)};
}

static int connect_owner(struct xr_device *dev, int fd)
{
	struct sockaddr_un addr;
	socklen_t len;
	int err = xr_share_address(dev->ifname, &addr, &len);

	if (err)
		return err;
	if (!connect(fd, (struct sockaddr *)&addr, len))
		return 0;
	/* Nobody listens: the owner is starting, or has just gone. */
	return errno == ECONNREFUSED || errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
}

static int join_owner(struct xr_device *dev, struct xr_share_guest *g, uint64_t deadline_ns)
{
	struct xr_share_hello hello;
	uint64_t now = xr_now_ns();
	struct timeval tv;
	ssize_t n;
	int err;

	g->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (g->fd < 0)
		return -errno;
	err = connect_owner(dev, g->fd);
	if (err)
		return err;
	tv = timeval_of_us(now < deadline_ns ? (deadline_ns - now) / 1000 + 1 : 1);
	if (setsockopt(g->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	n = recv(g->fd, &hello, sizeof(hello), MSG_TRUNC);
	if (n == 0)
		return -EAGAIN; /* hung up without a word: the owner went */
	/* Refused (holder 0: full, or not our user), or gone quiet. */
	if (n != sizeof(hello) || hello.magic != XR_SHARE_MAGIC ||
	    hello.version != XR_SHARE_VERSION || !hello.holder ||
	    hello.holder > XR_SHARE_MAX_GUESTS)
		return -EBUSY;
	g->holder = hello.holder;
	tv = timeval_of_us(SEND_TIMEOUT_US);
	return setsockopt(g->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ? -errno : 0;
}

int xr_share_guest_open(struct xr_device *dev, uint64_t deadline_ns)
{
	struct xr_share_guest *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	err = join_owner(dev, g, deadline_ns);
	if (err) {
		if (g->fd >= 0)
			close(g->fd);
		free(g);
		return err;
	}
	dev->share_guest = g;
	return 0;
}

void xr_share_guest_close(struct xr_device *dev)
{
	struct xr_share_guest *g = dev->share_guest;

	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	free(g);
	dev->share_guest = NULL;
}

/* The owner hung up: this device is gone, as if its hardware had failed. */
static void owner_lost(struct xr_device *dev)
{
	close(dev->share_guest->fd);
	dev->share_guest->fd = -1;
	/* Its table's slots may be the next owner's: our QPs write there no more. */
	dev->core.xdp_qps = NULL;
	xr_core_device_fatal(&dev->core);
}

static uint8_t *guest_tx_alloc(void *ctx, uint32_t *cap)
{
	*cap = XR_SHARE_FRAME_CAP;
	return ((struct xr_device *)ctx)->share_guest->tx_buf;
}

/* The owner sends it, on its queue 0. */
static void guest_tx_submit(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	struct xr_device *dev = ctx;
	int fd = dev->share_guest->fd;

	(void)queue;
	xr_count_syscalls(dev, fd >= 0);
	if (fd < 0 || send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
		dev->core.stats.relay_drops++;
	else
		dev->core.stats.relay_frames++;
}

static void guest_tx_abort(void *ctx, uint8_t *buf)
{
	(void)ctx;
	(void)buf;
}

void xr_share_guest_port(struct xr_device *dev, struct xr_core_port *port)
{
	*port = (struct xr_core_port){.ctx = dev,
				      .tx_alloc = guest_tx_alloc,
				      .tx_submit = guest_tx_submit,
				      .tx_abort = guest_tx_abort};
}

unsigned xr_share_guest_rx(struct xr_device *dev, uint64_t now)
{
	struct xr_share_guest *g = dev->share_guest;
	unsigned n = 0;

	while (g->fd >= 0 && n < RX_BATCH) {
		ssize_t len = recv(g->fd, g->rx_buf, sizeof(g->rx_buf), MSG_DONTWAIT | MSG_TRUNC);

		xr_count_syscalls(dev, 1);

		if (len <= 0) {
			if (!len || (errno != EAGAIN && errno != EINTR))
				owner_lost(dev);
			break;
		}
		n++;
		if ((size_t)len <= sizeof(g->rx_buf))
			xr_core_rx(&dev->core, g->rx_buf, (uint32_t)len, XR_RX_NO_QUEUE, now);
	}
	return n;
}

int xr_share_guest_fd(const struct xr_device *dev)
{
	return dev->share_guest ? dev->share_guest->fd : -1;
}

uint16_t xr_share_guest_holder(const struct xr_device *dev)
{
	return dev->share_guest->holder;
}
