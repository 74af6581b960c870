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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdp_attach.h"
#include "xroce_xdp.skel.h"

#define BPFFS_MOUNT "/sys/fs/bpf"
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* The order of the maps in pin_everything and of the fds in xr_xdp_open. */
static const char *const map_pins[] = {
    XR_PIN_QP_MAP,     XR_PIN_XSK_MAP,	 XR_PIN_STATS_MAP,	 XR_PIN_CONFIG_MAP,
    XR_PIN_ENGINE_MAP, XR_PIN_MCAST_MAP, XR_PIN_ENGINE_PORT_MAP,
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

/*
 * The initial mount namespace's inode number on kernels that fix it (6.x);
 * on older ones it is dynamic and only pid 1's namespace says which it is.
 */
#define INIT_MNT_NS_INODE 0xEFFFFFF8u

/*
 * Whether this process shares the host's mount namespace (true when that
 * cannot be told: no /proc). Only then does a bpffs mounted here outlast it.
 */
static bool in_host_mount_namespace(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/mnt", &self))
		return true;
	if (self.st_ino == INIT_MNT_NS_INODE)
		return true;
	if (stat("/proc/1/ns/mnt", &init) == 0)
		return self.st_dev == init.st_dev && self.st_ino == init.st_ino;
	/*
	 * pid 1 is hidden (some sandboxes do that). A kernel with the fixed
	 * inode says we are elsewhere; on an older one this may be the host
	 * without bpffs yet, and refusing asks the operator to mount it.
	 */
	return false;
}

static bool bpffs_mounted(void)
{
	struct statfs fs;

	return statfs(BPFFS_MOUNT, &fs) == 0 && fs.f_type == BPF_FS_MAGIC;
}

/*
 * `ip netns exec` unshares the mount namespace and mounts a fresh /sys,
 * hiding bpffs: a bpffs mounted there, and every pin in it, would vanish
 * when the command exits, taking the attachment with it.
 */
int xr_xdp_check_bpffs(void)
{
	if (bpffs_mounted() || in_host_mount_namespace())
		return 0;
	return -ENOMEDIUM;
}

static int ensure_bpffs(void)
{
	int err = xr_xdp_check_bpffs();

	if (err || bpffs_mounted())
		return err;
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

/*
 * Detaches the link first, so the interface (if it still exists) is clean
 * when this returns rather than when the kernel frees the unpinned link;
 * then removes every pin of ifname and its directory; the root goes when
 * empty.
 */
static void remove_pins(const char *ifname)
{
	char path[PATH_MAX];
	size_t i;
	int fd;

	if (!pin_path(ifname, XR_PIN_PROG_LINK, path, sizeof(path))) {
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			bpf_link_detach(fd);
			close(fd);
		}
		unlink(path);
	}
	for (i = 0; i < sizeof(map_pins) / sizeof(map_pins[0]); i++)
		if (!pin_path(ifname, map_pins[i], path, sizeof(path)))
			unlink(path);
	if (!pin_dir(ifname, path, sizeof(path)))
		rmdir(path);
	rmdir(XR_PIN_ROOT);
}

/* The network namespace's cookie (never reused while the system runs), or 0. */
static __u64 netns_cookie(void)
{
	socklen_t len = sizeof(__u64);
	__u64 cookie = 0;
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
		cookie = 0;
	close(fd);
	return cookie;
}

/* 1 and the config if its pin holds one of this build's layout, else 0. */
static int read_config(const char *ifname, struct xr_xdp_config *cfg)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info), zero = 0;
	int fd, ok;

	fd = open_pin(ifname, XR_PIN_CONFIG_MAP);
	if (fd < 0)
		return 0;
	ok = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == BPF_MAP_TYPE_ARRAY &&
	     info.value_size == sizeof(*cfg) && bpf_map_lookup_elem(fd, &zero, cfg) == 0;
	close(fd);
	return ok;
}

const char *xr_xdp_stale_reason(enum xr_xdp_state state)
{
	switch (state) {
	case XR_XDP_STALE_GONE:
		return "interface was gone";
	case XR_XDP_STALE_OTHER_IF:
		return "another interface has that name now";
	case XR_XDP_STALE_BROKEN:
		return "pins incomplete";
	default:
		return "not stale";
	}
}

const char *xr_xdp_mode_name(__u32 mode)
{
	switch (mode) {
	case XR_XDP_MODE_NATIVE:
		return "native";
	case XR_XDP_MODE_GENERIC:
		return "generic";
	default:
		return "unknown";
	}
}

const char *xr_xdp_state_name(enum xr_xdp_state state)
{
	switch (state) {
	case XR_XDP_NOT_ATTACHED:
		return "not_attached";
	case XR_XDP_LIVE:
		return "live";
	case XR_XDP_OTHER_NETNS:
		return "other_netns";
	case XR_XDP_OTHER_BUILD:
		return "other_build";
	default:
		return "stale";
	}
}

int xr_xdp_inspect(const char *ifname, struct xr_xdp_attachment *out)
{
	struct bpf_link_info link = {0};
	__u32 len = sizeof(link);
	struct xr_xdp_config cfg;
	char dir[PATH_MAX];
	__u64 cookie;
	int fd, err;

	memset(out, 0, sizeof(*out));
	err = pin_dir(ifname, dir, sizeof(dir));
	if (err)
		return err;
	out->ifindex_here = if_nametoindex(ifname);
	err = path_exists(dir);
	if (err <= 0)
		return err; /* XR_XDP_NOT_ATTACHED, or cannot look */
	out->state = XR_XDP_STALE_BROKEN;
	fd = open_pin(ifname, XR_PIN_PROG_LINK);
	if (fd == -EPERM)
		return fd;
	if (fd < 0)
		return 0;
	err = bpf_obj_get_info_by_fd(fd, &link, &len) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if (link.type != BPF_LINK_TYPE_XDP)
		return 0;
	out->prog_id = link.prog_id;
	out->link_id = link.id;
	out->ifindex = link.xdp.ifindex;
	/* The kernel clears the link's interface when that interface goes away. */
	if (!link.xdp.ifindex) {
		out->state = XR_XDP_STALE_GONE;
		if (read_config(ifname, &cfg)) {
			out->mode = cfg.mode;
			out->config_flags = cfg.flags;
		}
		return 0;
	}
	/* Live, but whose and where only its own build can tell: leave it alone. */
	if (!read_config(ifname, &cfg)) {
		out->state = XR_XDP_OTHER_BUILD;
		return 0;
	}
	out->mode = cfg.mode;
	out->config_flags = cfg.flags;
	cookie = netns_cookie();
	if (cookie && cfg.netns_cookie && cookie != cfg.netns_cookie) {
		out->state = XR_XDP_OTHER_NETNS;
		return 0;
	}
	out->state = out->ifindex_here == link.xdp.ifindex ? XR_XDP_LIVE : XR_XDP_STALE_OTHER_IF;
	return 0;
}

/*
 * The program on ifindex (in any mode), if any: 1 with its id, name and
 * `ip link` hook name in res, 0, or a negative errno.
 */
static int other_xdp_program(int ifindex, struct xr_xdp_attach_result *res)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, query);
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	int fd, err;

	err = bpf_xdp_query(ifindex, 0, &query);
	if (err)
		return err;
	if (query.drv_prog_id) {
		res->other_prog_id = query.drv_prog_id;
		res->other_prog_hook = "xdpdrv";
	} else if (query.skb_prog_id) {
		res->other_prog_id = query.skb_prog_id;
		res->other_prog_hook = "xdpgeneric";
	} else if (query.hw_prog_id) {
		res->other_prog_id = query.hw_prog_id;
		res->other_prog_hook = "xdpoffload";
	} else {
		return 0;
	}
	fd = bpf_prog_get_fd_by_id(res->other_prog_id);
	if (fd >= 0) {
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			snprintf(res->other_prog_name, sizeof(res->other_prog_name), "%s",
				 info.name);
		close(fd);
	}
	return 1;
}

static int pin_everything(struct xroce_xdp_bpf *skel, int link_fd, const char *ifname)
{
	struct bpf_map *maps[] = {
	    skel->maps.qp_table,    skel->maps.xsk_map,	     skel->maps.stats,
	    skel->maps.config,	    skel->maps.engine_stats, skel->maps.mcast_groups,
	    skel->maps.engine_port,
	};
	char path[PATH_MAX];
	size_t i;
	int err;

	_Static_assert(sizeof(maps) / sizeof(maps[0]) == sizeof(map_pins) / sizeof(map_pins[0]),
		       "one pin name per map");
	err = pin_path(ifname, XR_PIN_PROG_LINK, path, sizeof(path));
	if (err)
		return err;
	if (bpf_obj_pin(link_fd, path))
		return fs_errno(errno);
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

static __u32 xdp_mode_flags(enum xr_xdp_mode mode)
{
	return mode == XR_XDP_MODE_GENERIC ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

/*
 * Attaches in the mode asked for; without one, native, else generic when the
 * driver has none. The link is what the kernel keeps once it is pinned.
 */
static int link_program(struct xroce_xdp_bpf *skel, int ifindex,
			const struct xr_xdp_attach_opts *opts, struct xr_xdp_attach_result *res)
{
	LIBBPF_OPTS(bpf_link_create_opts, link_opts);
	int prog_fd = bpf_program__fd(skel->progs.xroce_xdp), fd;

	res->mode = opts->mode ?: XR_XDP_MODE_NATIVE;
	link_opts.flags = xdp_mode_flags(res->mode);
	fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &link_opts);
	if (fd < 0 && errno == EOPNOTSUPP && !opts->mode) {
		res->mode = XR_XDP_MODE_GENERIC;
		res->fell_back = true;
		link_opts.flags = xdp_mode_flags(res->mode);
		fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &link_opts);
	}
	if (fd < 0)
		return errno == EBUSY || errno == EEXIST ? -EBUSY : -errno;
	return fd;
}

int xr_xdp_attach(const char *ifname, const struct xr_xdp_attach_opts *opts,
		  struct xr_xdp_attach_result *res)
{
	static const struct xr_xdp_attach_opts defaults = {0};
	struct xr_xdp_attach_result ignored;
	struct xr_xdp_attachment seen;
	struct xr_xdp_config cfg = {0};
	struct xroce_xdp_bpf *skel = NULL;
	char dir[PATH_MAX];
	int ifindex, link_fd = -1, err;
	__u32 zero = 0;

	opts = opts ?: &defaults;
	res = res ?: &ignored;
	memset(res, 0, sizeof(*res));
	if (opts->mode && opts->mode != XR_XDP_MODE_NATIVE && opts->mode != XR_XDP_MODE_GENERIC)
		return -EINVAL;
	err = pin_dir(ifname, dir, sizeof(dir));
	if (err)
		return err == -EINVAL ? -ENODEV : err;
	ifindex = if_nametoindex(ifname);
	if (!ifindex)
		return -ENODEV;
	err = ensure_bpffs();
	if (err)
		return err;
	err = xr_xdp_inspect(ifname, &seen);
	if (err)
		return err;
	if (seen.state == XR_XDP_LIVE)
		return -EEXIST;
	if (seen.state == XR_XDP_OTHER_NETNS)
		return -EXDEV;
	if (seen.state == XR_XDP_OTHER_BUILD)
		return -EPROTO;
	if (xr_xdp_state_is_stale(seen.state) && !opts->replace_stale)
		return -ESTALE;
	err = other_xdp_program(ifindex, res);
	if (err)
		return err < 0 ? err : -EBUSY;

	skel = xroce_xdp_bpf__open_and_load();
	if (!skel)
		return -errno;
	link_fd = link_program(skel, ifindex, opts, res);
	if (link_fd < 0) {
		err = link_fd;
		/* Another program won the race since the query: name it. */
		if (err == -EBUSY && other_xdp_program(ifindex, res) != 1)
			err = -EEXIST;
		goto out;
	}
	cfg.ifindex = ifindex;
	cfg.netns_cookie = netns_cookie();
	cfg.mode = res->mode;
	cfg.flags = opts->embedded ? XR_XDP_CONFIG_EMBEDDED : 0;
	err = bpf_map__update_elem(skel->maps.config, &zero, sizeof(zero), &cfg, sizeof(cfg),
				   BPF_ANY);
	if (err)
		goto out;
	/* Only now that the new link holds the interface: a failure before leaves it as it was. */
	if (xr_xdp_state_is_stale(seen.state)) {
		remove_pins(ifname);
		res->replaced = seen.state;
	}
	err = make_root_dir();
	if (err)
		goto out;
	/* Creating the directory is the claim on ifname's pins: never remove another's. */
	if (mkdir(dir, 0700)) {
		err = errno == EEXIST ? -EEXIST : fs_errno(errno);
		goto out;
	}
	err = pin_everything(skel, link_fd, ifname);
	if (err)
		remove_pins(ifname);
out:
	/* Closing our fds detaches nothing that is pinned; on failure nothing is. */
	if (link_fd >= 0)
		close(link_fd);
	xroce_xdp_bpf__destroy(skel);
	return err;
}

int xr_xdp_detach(const char *ifname)
{
	struct xr_xdp_attachment seen;
	char dir[PATH_MAX];
	int err;

	err = pin_dir(ifname, dir, sizeof(dir));
	if (err)
		return err == -EINVAL ? -ENODEV : err;
	/*
	 * Pins are removed even when the interface is gone (its namespace
	 * deleted): they are what is left of the attachment.
	 */
	err = xr_xdp_inspect(ifname, &seen);
	if (err)
		return err;
	if (seen.state == XR_XDP_NOT_ATTACHED)
		return xr_xdp_check_bpffs() ?: seen.ifindex_here ? -ENOENT : -ENODEV;
	if (seen.state == XR_XDP_OTHER_NETNS)
		return -EXDEV;
	remove_pins(ifname);
	err = path_exists(dir);
	return err > 0 ? -ENOTEMPTY : err;
}

int xr_xdp_detach_if_stale(const char *ifname, enum xr_xdp_state *why)
{
	struct xr_xdp_attachment seen;
	int err;

	err = xr_xdp_inspect(ifname, &seen);
	if (err)
		return err;
	if (!xr_xdp_state_is_stale(seen.state))
		return 0;
	remove_pins(ifname);
	*why = seen.state;
	return 1;
}

int xr_xdp_prepare_device(const char *ifname, bool may_attach, bool *attached_by_us)
{
	struct xr_xdp_attach_opts opts = {.embedded = true};
	struct xr_xdp_attachment seen;
	int err;

	*attached_by_us = false;
	err = xr_xdp_inspect(ifname, &seen);
	if (err)
		return err;
	switch (seen.state) {
	case XR_XDP_LIVE:
		return 0;
	case XR_XDP_OTHER_NETNS:
		return -EXDEV;
	case XR_XDP_OTHER_BUILD:
		return -EPROTO;
	case XR_XDP_NOT_ATTACHED:
		if (!may_attach)
			return xr_xdp_check_bpffs() ?: -ENOENT;
		break;
	default:
		/* An operator's attachment is the operator's to replace. */
		if (!may_attach || !(seen.config_flags & XR_XDP_CONFIG_EMBEDDED))
			return -ESTALE;
		opts.replace_stale = true;
	}
	err = xr_xdp_attach(ifname, &opts, NULL);
	if (err)
		return err;
	*attached_by_us = true;
	return 0;
}

const char *xr_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case ESTALE:
		return "stale xroce attachment: its interface was deleted or re-created since it "
		       "was attached; run `xroce attach IFNAME` (replaces it) or `xroce detach "
		       "--stale`";
	case EXDEV:
		return "xroce is attached to an interface of this name in another network "
		       "namespace (pins are per name): detach it there, or rename one of them";
	case ENOMEDIUM:
		return "/sys/fs/bpf here is not the host's bpffs (a private mount namespace, as "
		       "`ip netns exec` makes): run it under `nsenter --net=/var/run/netns/NS` "
		       "instead";
	case EPROTO:
		return "the pins under /sys/fs/bpf/xroce/IFNAME are another xroce build's (another "
		       "map layout): detach it (`xroce detach IFNAME`) and attach with this build";
	case EBUSY:
		return "another XDP program runs on the interface, or another process has the "
		       "device open";
	default:
		return strerror(err < 0 ? -err : err);
	}
}

bool xr_xdp_is_attached(const char *ifname)
{
	char path[PATH_MAX];

	return pin_path(ifname, XR_PIN_PROG_LINK, path, sizeof(path)) == 0 &&
	       path_exists(path) == 1;
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t qp_table_size(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = XR_QP_TABLE_SLOTS * sizeof(struct xr_qp_entry);

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
	    info.max_entries != XR_QP_TABLE_SLOTS || !(info.map_flags & BPF_F_MMAPABLE))
		return -EPROTO;
	return 0;
}

static int check_mcast_map(int fd)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_HASH || info.key_size != sizeof(struct xr_mcast_key) ||
	    info.value_size != sizeof(struct xr_mcast_entry) ||
	    info.max_entries != XR_MAX_MCAST_GROUPS)
		return -EPROTO;
	return 0;
}

int xr_xdp_open(const char *ifname, struct xr_xdp_handle *h)
{
	/* In the order of map_pins. */
	int *fds[] = {&h->qp_map_fd,	 &h->xsk_map_fd,   &h->stats_map_fd,	  &h->config_map_fd,
		      &h->engine_map_fd, &h->mcast_map_fd, &h->engine_port_map_fd};
	struct xr_xdp_config cfg;
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
		/* A live attachment without one of our maps is an older build's. */
		if (err == -ENOENT)
			err = -EPROTO;
		if (err < 0)
			goto fail;
		*fds[i] = err;
	}
	err = check_qp_map(h->qp_map_fd) ?: check_mcast_map(h->mcast_map_fd);
	if (err)
		goto fail;
	if (!read_config(ifname, &cfg)) {
		err = -EPROTO;
		goto fail;
	}
	/* Generic XDP runs after the driver, on skbs: its sockets copy, never bind zero-copy. */
	h->xsk_bind_flags = cfg.mode == XR_XDP_MODE_GENERIC ? XDP_COPY : 0;
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
	close_fd(&h->mcast_map_fd);
	close_fd(&h->engine_port_map_fd);
}

int xr_xdp_publish_engine_port(const struct xr_xdp_handle *h, const struct xr_engine_port *port)
{
	__u32 zero = 0;

	return bpf_map_update_elem(h->engine_port_map_fd, &zero, port, BPF_ANY) ? -errno : 0;
}

/*
 * The single entry of a pinned array the engine writes. Pinned by another
 * version of xroce (a value of another size), it is not ours to read: -EPROTO.
 */
static int read_engine_entry(const char *ifname, const char *pin, void *value, __u32 size)
{
	struct bpf_map_info info = {0};
	__u32 zero = 0, len = sizeof(info);
	int fd, err;

	fd = open_pin(ifname, pin);
	if (fd < 0)
		return fd == -ENOENT ? -EPROTO : fd;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (!err && info.value_size != size)
		err = -EPROTO;
	if (!err)
		err = bpf_map_lookup_elem(fd, &zero, value) ? -errno : 0;
	close(fd);
	return err;
}

int xr_xdp_read_engine_port(const char *ifname, struct xr_engine_port *port)
{
	return read_engine_entry(ifname, XR_PIN_ENGINE_PORT_MAP, port, sizeof(*port));
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
	return read_engine_entry(ifname, XR_PIN_ENGINE_MAP, stats, sizeof(*stats));
}
