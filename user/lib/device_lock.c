// SPDX-License-Identifier: MIT
/* The lock that makes one process the owner of an interface's device (device_lock.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "device_lock.h"
#include "xroce/xroce.h"

/* The kernel's task flag for a process inside exit(): its files are being closed. */
#define PF_EXITING 0x00000004u
/* How often a lock held by an exiting process is tried again. */
#define LOCK_RETRY_NS 2000000L

static int lock_path(const char *ifname, char *buf, size_t size)
{
	int n;

	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE || strchr(ifname, '/') ||
	    !strcmp(ifname, ".") || !strcmp(ifname, ".."))
		return -EINVAL;
	n = snprintf(buf, size, "%s/%s.lock", XR_LOCK_DIR, ifname);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The pid the owner wrote, or 0 when there is none (yet). */
static pid_t read_owner_pid(int fd)
{
	char buf[24];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;
	char *end;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return end != buf && *end == '\n' && pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

/* The value of a "Name:\thex" line of /proc/PID/status; 0 when absent. */
static unsigned long long status_mask(const char *status, const char *name)
{
	const char *line = strstr(status, name);

	return line ? strtoull(line + strlen(name), NULL, 16) : 0;
}

enum owner_state {
	OWNER_GONE,
	OWNER_EXITING, /* inside exit(), or SIGKILL on its way: the lock is about to go */
	OWNER_LIVE,
};

static enum owner_state owner_state_of(pid_t pid)
{
	char path[64], buf[4096], *after_comm;
	unsigned long long sigkill = 1ull << (SIGKILL - 1);
	unsigned int flags;
	char state;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return OWNER_GONE;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return OWNER_GONE;
	buf[n] = '\0';
	/* The command name in parentheses may hold anything, spaces and ')' included. */
	after_comm = strrchr(buf, ')');
	if (!after_comm ||
	    sscanf(after_comm + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return OWNER_GONE;
	if (state == 'Z' || state == 'X' || (flags & PF_EXITING))
		return OWNER_EXITING;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return OWNER_GONE;
	buf[n] = '\0';
	if ((status_mask(buf, "\nShdPnd:") | status_mask(buf, "\nSigPnd:")) & sigkill)
		return OWNER_EXITING;
	return OWNER_LIVE;
}

static int open_lock_file(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0644);

	return fd < 0 ? -errno : fd;
}

static int write_our_pid(int fd)
{
	char buf[24];
	int len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)len, 0) != len)
		return -errno;
	return 0;
}

/* Whether path still names the file fd has open: an owner removes it as it lets go. */
static bool still_linked(int fd, const char *path)
{
	struct stat ours, now;

	return fstat(fd, &ours) == 0 && stat(path, &now) == 0 && ours.st_dev == now.st_dev &&
	       ours.st_ino == now.st_ino;
}

/* Locks the file at path, waiting while its owner is about to let go; 0 or a negative errno. */
static int lock_file(int fd, uint64_t deadline_ns)
{
	const struct timespec pause = {.tv_nsec = LOCK_RETRY_NS};
	pid_t owner;

	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK)
			return -errno;
		/*
		 * No pid, or the pid of a process that is gone: the owner took the
		 * lock a moment ago and has not written its pid yet. Both that and
		 * an exiting owner pass soon; a live owner does not.
		 */
		owner = read_owner_pid(fd);
		if ((owner && owner_state_of(owner) == OWNER_LIVE) || xr_now_ns() >= deadline_ns)
			return -EBUSY;
		nanosleep(&pause, NULL);
	}
	return 0;
}

int xr_device_lock(const char *ifname, uint64_t deadline_ns)
{
	char path[PATH_MAX];
	int fd, err;

	err = lock_path(ifname, path, sizeof(path));
	if (err)
		return err;
	if (mkdir(XR_LOCK_DIR, 0755) && errno != EEXIST)
		return -errno;
	for (;;) {
		fd = open_lock_file(path, O_RDWR | O_CREAT);
		if (fd < 0)
			return fd;
		err = lock_file(fd, deadline_ns);
		if (!err && still_linked(fd, path))
			break;
		close(fd);
		/* Locked a file its owner had just removed: take the one there now. */
		if (err || xr_now_ns() >= deadline_ns)
			return err ? err : -EBUSY;
	}
	err = write_our_pid(fd);
	if (err) {
		xr_device_unlock(ifname, fd);
		return err;
	}
	return fd;
}

void xr_device_unlock(const char *ifname, int fd)
{
	char path[PATH_MAX];

	/* Removed while still locked: whoever opened it before locks it, sees that and moves on. */
	if (!lock_path(ifname, path, sizeof(path)))
		unlink(path);
	close(fd);
}

int xr_device_holder(const char *ifname)
{
	char path[PATH_MAX];
	pid_t owner = 0;
	int fd, err;

	err = lock_path(ifname, path, sizeof(path));
	if (err)
		return err;
	fd = open_lock_file(path, O_RDONLY);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	/* A lock that can be shared has no owner, whatever pid a killed one left. */
	if (flock(fd, LOCK_SH | LOCK_NB) && errno == EWOULDBLOCK)
		owner = read_owner_pid(fd);
	close(fd);
	return owner && owner_state_of(owner) != OWNER_GONE ? (int)owner : 0;
}
