/* SPDX-License-Identifier: MIT */
/*
 * One process owns an interface's xroce device at a time: the owner holds an
 * exclusive flock on XR_LOCK_DIR/IFNAME.lock, and the file holds its pid.
 * The kernel drops the lock when the process ends, however it ends, so a
 * held lock means a live (or exiting) owner; an owner that closes the device
 * removes the file, one that was killed leaves it (with its pid) to the next. The lock guards what
 * the owner resets and uses: the pinned maps and the interface's AF_XDP queues.
 */
#ifndef XROCE_DEVICE_LOCK_H
#define XROCE_DEVICE_LOCK_H

#include <stdint.h>

#define XR_LOCK_DIR "/run/xroce"

/*
 * Takes ifname's lock and writes our pid into it; returns its fd (>= 0).
 * An owner that is exiting is waited for until deadline_ns (CLOCK_MONOTONIC);
 * -EBUSY when a live process holds the lock, or it is still held at the
 * deadline; or another negative errno.
 */
int xr_device_lock(const char *ifname, uint64_t deadline_ns);
/* Removes the lock file and drops the lock. */
void xr_device_unlock(const char *ifname, int fd);

#endif /* XROCE_DEVICE_LOCK_H */
