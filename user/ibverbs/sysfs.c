/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' sysfs helpers, which its tools and librdmacm call. No xroce
 * device has a sysfs directory (their paths say so), so reads under a
 * device's path fail and callers take their fallbacks; the helpers
 * themselves work on any file, with rdma-core's results.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

/* rdma-core's bound on $SYSFS_PATH. */
#define XV_SYSFS_PATH_MAX 256

const char *ibv_get_sysfs_path(void);

static const char *sysfs_path;
static pthread_once_t sysfs_path_once = PTHREAD_ONCE_INIT;

static void sysfs_path_init(void)
{
	/* A set-user-ID program does not take the path from its caller. */
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
	char *path;
	size_t len;

	sysfs_path = "/sys";
	if (!env)
		return;
	path = strndup(env, XV_SYSFS_PATH_MAX);
	if (!path)
		return;
	len = strlen(path);
	while (len > 0 && path[len - 1] == '/')
		path[--len] = '\0';
	sysfs_path = path;
}

/* Where sysfs is, decided once per process, as libibverbs does. */
const char *ibv_get_sysfs_path(void)
{
	pthread_once(&sysfs_path_once, sysfs_path_init);
	return sysfs_path;
}

/*
 * DIR/FILE's contents, NUL-terminated, without a final newline: their
 * length, or -1 when it cannot be read or would not fit with its NUL.
 */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t len;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len > 0) {
		if (buf[len - 1] == '\n')
			buf[--len] = '\0';
		else if ((size_t)len < size)
			buf[len] = '\0';
		else
			return -1;
	}
	return (int)len;
}
