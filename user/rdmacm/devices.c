/* SPDX-License-Identifier: MIT */
/*
 * The devices the CM puts ids on: every xroce device of the namespace,
 * opened once per process through libibverbs (as librdmacm does), so that
 * libxroce's CM finds each open and an id's verbs is an ibv_context the
 * application can use. They stay open until the process exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

struct rc_device {
	struct ibv_context *context;
	struct ibv_pd *pd; /* the CM's, made when an id first needs it */
	char name[IBV_SYSFS_NAME_MAX];
};

static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rc_device *devices;
static int num_devices;

static bool known_locked(const char *name)
{
	for (int i = 0; i < num_devices; i++)
		if (!strcmp(devices[i].name, name))
			return true;
	return false;
}

/* Opens the devices not open yet: those attached since the last scan too. */
static int scan_locked(void)
{
	struct ibv_device **list;
	int n, err = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return errno;
	for (int i = 0; i < n; i++) {
		struct rc_device *grown;
		struct ibv_context *context;

		if (known_locked(list[i]->name))
			continue;
		context = ibv_open_device(list[i]);
		if (!context)
			continue; /* detached meanwhile: not a device any more */
		grown = realloc(devices, (num_devices + 1) * sizeof(*devices));
		if (!grown) {
			ibv_close_device(context);
			err = ENOMEM;
			break;
		}
		devices = grown;
		devices[num_devices] = (struct rc_device){.context = context};
		snprintf(devices[num_devices].name, sizeof(devices[num_devices].name), "%s",
			 list[i]->name);
		num_devices++;
	}
	ibv_free_device_list(list);
	return err;
}

static bool scanned;

int rc_init(void)
{
	int err = 0;

	pthread_mutex_lock(&devices_lock);
	if (!scanned) {
		err = scan_locked();
		scanned = !err;
	}
	pthread_mutex_unlock(&devices_lock);
	return err ? rc_fail(err) : 0;
}

static struct rc_device *find_locked(struct xr_device *dev)
{
	for (int i = 0; i < num_devices; i++)
		if (xroce_ibv_device_of(devices[i].context) == dev)
			return &devices[i];
	return NULL;
}

struct ibv_context *rc_context_of(struct xr_device *dev, struct ibv_pd **pd)
{
	struct rc_device *d;

	pthread_mutex_lock(&devices_lock);
	d = find_locked(dev);
	if (!d && !scan_locked())
		d = find_locked(dev);
	if (d && pd) {
		if (!d->pd)
			d->pd = ibv_alloc_pd(d->context);
		*pd = d->pd;
	}
	pthread_mutex_unlock(&devices_lock);
	if (!d)
		errno = ENODEV;
	return d ? d->context : NULL;
}

struct ibv_context **rdma_get_devices(int *num)
{
	struct ibv_context **list;

	if (rc_init())
		return NULL;
	pthread_mutex_lock(&devices_lock);
	list = calloc(num_devices + 1, sizeof(*list));
	if (list) {
		for (int i = 0; i < num_devices; i++)
			list[i] = devices[i].context;
		if (num)
			*num = num_devices;
	}
	pthread_mutex_unlock(&devices_lock);
	if (!list)
		errno = ENOMEM;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
