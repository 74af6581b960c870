// SPDX-License-Identifier: MIT
/*
 * Attach, detach and open the pinned XDP program (see xdp_attach.h). The
 * pins are the only record of an attachment: the link pin keeps the program
 * on the interface after the loader exits, and removing it detaches.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdp_attach.h"
#include "xroce_xdp.skel.h"

#define BPFFS_MOUNT "/sys/fs/bpf"

/* The order of the maps in pin_everything and of the fds in xr_xdp_open. */
static const char *const map_pins[] = {
    XR_PIN_QP_MAP, XR_PIN_XSK_MAP, XR_PIN_STATS_MAP, XR_PIN_CONFIG_MAP, XR_PIN_ENGINE_MAP,
};

/* The per-CPU sum adds the stats struct field by field as an array of u64. */
_Static_assert(sizeof(struct xr_xdp_stats) % sizeof(__u64) == 0,
	       "struct xr_xdp_stats must contain only __u64 counters");

/* Filesystem refusals on bpffs are permission problems for the caller. */
static int fs_errno(int err)
{
	return err == EACCES ? -EPERM : -err;
}

static int pin_dir(const char *ifname, char *buf, size_t size)
{
	int n;

	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE || strchr(ifname, '/'))
		return -EINVAL;
	n = snprintf(buf, size, "%s/%s", XR_PIN_ROOT, ifname);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int pin_path(const char *ifname, const char *name, char *buf, size_t size)
{
	size_t dir_len;
	int n, err;

	err = pin_dir(ifname, buf, size);
	if (err)
		return err;
	dir_len = strlen(buf);
	n = snprintf(buf + dir_len, size - dir_len, "/%s", name);
	return n < 0 || (size_t)n >= size - dir_len ? -ENAMETOOLONG : 0;
}

/* 1 if path exists, 0 if not, or a negative errno (-EPERM for non-root). */
static int path_exists(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : fs_errno(errno);
}

static int ensure_bpffs(void)
{
	struct statfs fs;

	if (statfs(BPFFS_MOUNT, &fs) == 0 && fs.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", BPFFS_MOUNT, "bpf", 0, "mode=0700"))
		return fs_errno(errno);
	return 0;
}

static int make_root_dir(void)
{
	if (mkdir(XR_PIN_ROOT, 0700) && errno != EEXIST)
		return fs_errno(errno);
	return 0;
}

/* Removes every pin of ifname and its directory; the root goes when empty. */
static void remove_pins(const char *ifname)
{
	char path[PATH_MAX];
	size_t i;

	if (!pin_path(ifname, XR_PIN_PROG_LINK, path, sizeof(path)))
		unlink(path);
	for (i = 0; i < sizeof(map_pins) / sizeof(map_pins[0]); i++)
		if (!pin_path(ifname, map_pins[i], path, sizeof(path)))
			unlink(path);
	if (!pin_dir(ifname, path, sizeof(path)))
		rmdir(path);
	rmdir(XR_PIN_ROOT);
}

static int interface_has_xdp(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, query);
	int err;

	err = bpf_xdp_query(ifindex, 0, &query);
	if (err)
		return err;
	return query.attach_mode != XDP_ATTACHED_NONE;
}

static int pin_everything(struct xroce_xdp_bpf *skel, struct bpf_link *link, const char *ifname)
{
	struct bpf_map *maps[] = {
	    skel->maps.qp_table, skel->maps.xsk_map,	  skel->maps.stats,
	    skel->maps.config,	 skel->maps.engine_stats,
	};
	char path[PATH_MAX];
	size_t i;
	int err;

	_Static_assert(sizeof(maps) / sizeof(maps[0]) == sizeof(map_pins) / sizeof(map_pins[0]),
		       "one pin name per map");
	err = pin_path(ifname, XR_PIN_PROG_LINK, path, sizeof(path));
	if (err)
		return err;
	err = bpf_link__pin(link, path);
	if (err)
		return fs_errno(-err);
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		err = pin_path(ifname, map_pins[i], path, sizeof(path));
		if (err)
			return err;
		err = bpf_map__pin(maps[i], path);
		if (err)
			return fs_errno(-err);
	}
	return 0;
}

int xr_xdp_attach(const char *ifname)
{
	struct xr_xdp_config cfg = {0};
	struct xroce_xdp_bpf *skel = NULL;
	struct bpf_link *link = NULL;
	char dir[PATH_MAX];
	__u32 zero = 0;
	int ifindex, err;

	err = pin_dir(ifname, dir, sizeof(dir));
	if (err)
		return err == -EINVAL ? -ENODEV : err;
	ifindex = if_nametoindex(ifname);
	if (!ifindex)
		return -ENODEV;
	err = ensure_bpffs();
	if (err)
		return err;
	err = path_exists(dir);
	if (err)
		return err < 0 ? err : -EEXIST;
	err = interface_has_xdp(ifindex);
	if (err)
		return err < 0 ? err : -EEXIST;

	skel = xroce_xdp_bpf__open_and_load();
	if (!skel)
		return -errno;
	cfg.ifindex = ifindex;
	err = bpf_map__update_elem(skel->maps.config, &zero, sizeof(zero), &cfg, sizeof(cfg),
				   BPF_ANY);
	if (err)
		goto out;

	link = bpf_program__attach_xdp(skel->progs.xroce_xdp, ifindex);
	if (!link) {
		/* Another program won the race since the query above. */
		err = errno == EBUSY ? -EEXIST : -errno;
		goto out;
	}
	err = make_root_dir();
	if (err)
		goto out;
	/* Creating the directory is the claim on ifname's pins: never remove another's. */
	if (mkdir(dir, 0700)) {
		err = errno == EEXIST ? -EEXIST : fs_errno(errno);
		goto out;
	}
	err = pin_everything(skel, link, ifname);
	if (err)
		remove_pins(ifname);
out:
	/* Closing our fds detaches nothing that is pinned; on failure nothing is. */
	bpf_link__destroy(link);
	xroce_xdp_bpf__destroy(skel);
	return err;
}

int xr_xdp_detach(const char *ifname)
{
	char dir[PATH_MAX];
	int err;

	err = pin_dir(ifname, dir, sizeof(dir));
	if (err)
		return err == -EINVAL ? -ENODEV : err;
	/*
	 * Pins are removed even when the interface is gone (its namespace
	 * deleted): they are what is left of the attachment.
	 */
	err = path_exists(dir);
	if (err < 0)
		return err;
	if (!err)
		return if_nametoindex(ifname) ? -ENOENT : -ENODEV;
	remove_pins(ifname);
	err = path_exists(dir);
	return err > 0 ? -ENOTEMPTY : err;
}

bool xr_xdp_is_attached(const char *ifname)
{
	char path[PATH_MAX];

	return pin_path(ifname, XR_PIN_PROG_LINK, path, sizeof(path)) == 0 &&
	       path_exists(path) == 1;
}

static int open_pin(const char *ifname, const char *name)
{
	char path[PATH_MAX];
	int fd, err;

	err = pin_path(ifname, name, path, sizeof(path));
	if (err)
		return err;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return fs_errno(errno);
	return fd;
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t qp_table_size(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = XR_MAX_QP * sizeof(struct xr_qp_entry);

	return (bytes + page - 1) / page * page;
}

/* Pins left by a build with another layout must not be mmap'ed as ours. */
static int check_qp_map(int fd)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.value_size != sizeof(struct xr_qp_entry) ||
	    info.max_entries != XR_MAX_QP || !(info.map_flags & BPF_F_MMAPABLE))
		return -EPROTO;
	return 0;
}

int xr_xdp_open(const char *ifname, struct xr_xdp_handle *h)
{
	/* In the order of map_pins. */
	int *fds[] = {&h->qp_map_fd, &h->xsk_map_fd, &h->stats_map_fd, &h->config_map_fd,
		      &h->engine_map_fd};
	void *table;
	size_t i;
	int err;

	_Static_assert(sizeof(fds) / sizeof(fds[0]) == sizeof(map_pins) / sizeof(map_pins[0]),
		       "one fd per pinned map");
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		*fds[i] = -1;
	h->qp_table = NULL;
	h->engine_stats = NULL;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		err = open_pin(ifname, map_pins[i]);
		if (err < 0)
			goto fail;
		*fds[i] = err;
	}
	err = check_qp_map(h->qp_map_fd);
	if (err)
		goto fail;
	table = mmap(NULL, qp_table_size(), PROT_READ | PROT_WRITE, MAP_SHARED, h->qp_map_fd, 0);
	if (table == MAP_FAILED) {
		err = fs_errno(errno);
		goto fail;
	}
	h->qp_table = table;
	table = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, h->engine_map_fd, 0);
	if (table == MAP_FAILED) {
		err = fs_errno(errno);
		goto fail;
	}
	h->engine_stats = table;
	return 0;

fail:
	xr_xdp_close(h);
	return err;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void xr_xdp_close(struct xr_xdp_handle *h)
{
	if (h->qp_table)
		munmap(h->qp_table, qp_table_size());
	h->qp_table = NULL;
	if (h->engine_stats)
		munmap(h->engine_stats, page_size());
	h->engine_stats = NULL;
	close_fd(&h->qp_map_fd);
	close_fd(&h->xsk_map_fd);
	close_fd(&h->stats_map_fd);
	close_fd(&h->config_map_fd);
	close_fd(&h->engine_map_fd);
}

int xr_xdp_read_stats(const char *ifname, struct xr_xdp_stats *sum)
{
	enum { FIELDS = sizeof(struct xr_xdp_stats) / sizeof(__u64) };
	struct xr_xdp_stats *per_cpu;
	__u64 *total = (__u64 *)sum;
	int fd, ncpus, cpu, i, err;
	__u32 zero = 0;

	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0)
		return ncpus;
	fd = open_pin(ifname, XR_PIN_STATS_MAP);
	if (fd < 0)
		return fd;
	per_cpu = calloc(ncpus, sizeof(*per_cpu));
	if (!per_cpu) {
		close(fd);
		return -ENOMEM;
	}
	err = bpf_map_lookup_elem(fd, &zero, per_cpu) ? -errno : 0;
	if (!err) {
		memset(sum, 0, sizeof(*sum));
		for (cpu = 0; cpu < ncpus; cpu++)
			for (i = 0; i < FIELDS; i++)
				total[i] += ((__u64 *)&per_cpu[cpu])[i];
	}
	free(per_cpu);
	close(fd);
	return err;
}

int xr_xdp_read_engine_stats(const char *ifname, struct xr_engine_stats *stats)
{
	struct bpf_map_info info = {0};
	__u32 zero = 0, len = sizeof(info);
	int fd, err;

	fd = open_pin(ifname, XR_PIN_ENGINE_MAP);
	if (fd < 0)
		return fd;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	/* Pinned by another version of xroce: its counters are not these. */
	if (!err && info.value_size != sizeof(*stats))
		err = -EPROTO;
	if (!err)
		err = bpf_map_lookup_elem(fd, &zero, stats) ? -errno : 0;
	close(fd);
	return err;
}
