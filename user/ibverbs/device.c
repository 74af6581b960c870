/* SPDX-License-Identifier: MIT */
/*
 * Devices: one per interface of this network namespace that xroce is
 * attached to (its pins under XR_PIN_ROOT live here), named xroce_IFNAME;
 * opening one opens libxroce's device on that interface.
 */
#include <dirent.h>
#include <endian.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shim.h"
#include "xdp_attach.h"

#define XV_NAME_PREFIX "xroce_"

static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;

static void device_get(struct xv_device *dev)
{
	pthread_mutex_lock(&refs_lock);
	dev->refs++;
	pthread_mutex_unlock(&refs_lock);
}

void xv_device_put(struct xv_device *dev)
{
	int left;

	pthread_mutex_lock(&refs_lock);
	left = --dev->refs;
	pthread_mutex_unlock(&refs_lock);
	if (!left)
		free(dev);
}

static struct xv_device *device_new(const char *ifname)
{
	struct xv_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	snprintf(dev->ifname, sizeof(dev->ifname), "%s", ifname);
	snprintf(dev->ibv.name, sizeof(dev->ibv.name), XV_NAME_PREFIX "%s", ifname);
	snprintf(dev->ibv.dev_name, sizeof(dev->ibv.dev_name), XV_NAME_PREFIX "%s", ifname);
	/* No sysfs device stands behind it: reads under these paths fail, as they should. */
	snprintf(dev->ibv.dev_path, sizeof(dev->ibv.dev_path), "/nonexistent/xroce/%s", ifname);
	snprintf(dev->ibv.ibdev_path, sizeof(dev->ibv.ibdev_path), "/nonexistent/xroce/%s", ifname);
	dev->ibv.node_type = IBV_NODE_CA;
	dev->ibv.transport_type = IBV_TRANSPORT_IB;
	dev->refs = 1;
	return dev;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Pins are per interface name across namespaces: only a live attachment here counts. */
static int attached_here(const char *ifname)
{
	struct xr_xdp_attachment seen;

	return !xr_xdp_inspect(ifname, &seen) && seen.state == XR_XDP_LIVE;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dir;
	int err = 0;

	dir = opendir(XR_PIN_ROOT);
	while (dir && (d = readdir(dir))) {
		char **grown;

		if (d->d_name[0] == '.' || strlen(d->d_name) >= IF_NAMESIZE ||
		    !attached_here(d->d_name))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				err = ENOMEM;
				break;
			}
			names = grown;
		}
		names[n] = strdup(d->d_name);
		if (!names[n]) {
			err = ENOMEM;
			break;
		}
		n++;
	}
	if (dir)
		closedir(dir);
	if (!err) {
		if (n)
			qsort(names, n, sizeof(*names), by_name);
		list = calloc(n + 1, sizeof(*list));
		if (!list)
			err = ENOMEM;
	}
	for (size_t i = 0; !err && i < n; i++) {
		struct xv_device *dev = device_new(names[i]);

		if (!dev) {
			err = ENOMEM;
			break;
		}
		list[i] = &dev->ibv;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (err) {
		if (list)
			ibv_free_device_list(list);
		errno = err;
		return NULL;
	}
	if (num_devices)
		*num_devices = (int)n;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	if (!list)
		return;
	for (struct ibv_device **d = list; *d; d++)
		xv_device_put(xv_container(*d, struct xv_device, ibv));
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

static struct xv_device *xv_dev(struct ibv_device *device)
{
	return xv_container(device, struct xv_device, ibv);
}

/*
 * The node GUID as rxe makes it: the MAC's EUI-64 (ff:fe in the middle, the
 * universal/local bit flipped), read from this namespace's interface.
 */
__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct ifreq ifr = {0};
	uint8_t eui[8];
	uint64_t guid;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", xv_dev(device)->ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		close(fd);
		return 0;
	}
	close(fd);
	memcpy(eui, ifr.ifr_hwaddr.sa_data, 3);
	eui[3] = 0xff;
	eui[4] = 0xfe;
	memcpy(eui + 5, ifr.ifr_hwaddr.sa_data + 3, 3);
	eui[0] ^= 2;
	memcpy(&guid, eui, sizeof(guid));
	return guid;
}

/* The interface index: unique and stable while the device exists, as libibverbs asks. */
int ibv_get_device_index(struct ibv_device *device)
{
	unsigned int index = if_nametoindex(xv_dev(device)->ifname);

	return index ? (int)index : -1;
}

/*
 * The contexts of one interface share libxroce's device: a second
 * xr_open_device in the process would be a guest of the first, without
 * QP1, and librdmacm opens every device besides those the program opens.
 */
struct shared_device {
	char ifname[IF_NAMESIZE];
	struct xr_device *xr;
	int contexts;
	struct shared_device *next;
};

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_device *shared_devices;

static struct xr_device *shared_open(const char *ifname)
{
	/* Only what the list showed: attached already, so never attach here. */
	const struct xr_device_open_attr attr = {.attach_if_needed = 0};
	struct shared_device *sd;
	struct xr_device *xr = NULL;

	pthread_mutex_lock(&shared_lock);
	for (sd = shared_devices; sd; sd = sd->next) {
		if (!strcmp(sd->ifname, ifname)) {
			sd->contexts++;
			xr = sd->xr;
			goto out;
		}
	}
	sd = calloc(1, sizeof(*sd));
	if (!sd) {
		errno = ENOMEM;
		goto out;
	}
	sd->xr = xr_open_device(ifname, &attr);
	if (!sd->xr) {
		free(sd);
		goto out;
	}
	snprintf(sd->ifname, sizeof(sd->ifname), "%s", ifname);
	sd->contexts = 1;
	sd->next = shared_devices;
	shared_devices = sd;
	xr = sd->xr;
out:
	pthread_mutex_unlock(&shared_lock);
	return xr;
}

/* 0, or libxroce's -EBUSY while the last context's device still has objects. */
static int shared_close(struct xr_device *xr)
{
	struct shared_device **p, *sd;
	int err = 0;

	pthread_mutex_lock(&shared_lock);
	for (p = &shared_devices; (sd = *p); p = &sd->next)
		if (sd->xr == xr)
			break;
	if (sd && sd->contexts > 1) {
		sd->contexts--;
	} else {
		err = xr_close_device(xr);
		if (!err && sd) {
			*p = sd->next;
			free(sd);
		}
	}
	pthread_mutex_unlock(&shared_lock);
	return err;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct xv_context *ctx;
	int err;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return xv_null(ENOMEM);
	ctx->xr = shared_open(xv_dev(device)->ifname);
	if (!ctx->xr) {
		err = errno;
		free(ctx);
		return xv_null(err);
	}
	ctx->dev = xv_dev(device);
	device_get(ctx->dev);
	ctx->vctx.context.device = device;
	ctx->vctx.context.cmd_fd = -1;
	ctx->vctx.context.async_fd = xr_async_fd(ctx->xr);
	ctx->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	xv_set_ops(ctx);
	return &ctx->vctx.context;
}

int ibv_close_device(struct ibv_context *context)
{
	struct xv_context *ctx = xv_ctx(context);
	int err;

	err = shared_close(ctx->xr);
	if (err) {
		/* As libibverbs' manual has it: -1, errno set (EBUSY while QPs are left). */
		errno = xv_errno(err);
		return -1;
	}
	pthread_mutex_destroy(&context->mutex);
	xv_device_put(ctx->dev);
	free(ctx);
	return 0;
}
