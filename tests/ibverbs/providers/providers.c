/* SPDX-License-Identifier: MIT */
/*
 * providers DEVICE: linked, as perftest is, with Debian's libmlx5 and
 * libefa beside -libverbs, and run under xroce-run. Those providers load
 * against xroce's library and must take xroce's devices for someone
 * else's: they tell theirs by the ops pointer right after struct
 * ibv_device, which xroce keeps NULL. Prints "providers: ok: N checks" and
 * exits 0, or names the first failure.
 */
#include <errno.h>
#include <infiniband/efadv.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PROGRAM "providers"
#include "../check.h"

int main(int argc, char **argv)
{
	struct efadv_device_attr efa_attr;
	struct ibv_device **list, *dev = NULL;
	struct ibv_context *ctx;
	int n, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: providers DEVICE\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			dev = list[i];
	CHECK(dev, "%s is not listed", argv[1]);

	CHECK(!mlx5dv_is_supported(dev), "libmlx5 takes %s for its own", argv[1]);
	errno = 0;
	CHECK(!mlx5dv_open_device(dev, NULL) && errno == EOPNOTSUPP,
	      "mlx5dv_open_device: errno %d, expected EOPNOTSUPP", errno);

	ctx = ibv_open_device(dev);
	CHECK(ctx, "ibv_open_device: %s", strerror(errno));
	memset(&efa_attr, 0, sizeof(efa_attr));
	ret = efadv_query_device(ctx, &efa_attr, sizeof(efa_attr));
	CHECK(ret == EOPNOTSUPP, "efadv_query_device: %d, expected EOPNOTSUPP", ret);
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	ibv_free_device_list(list);
	CHECK_SUMMARY();
	return 0;
}
