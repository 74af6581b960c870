/* SPDX-License-Identifier: MIT */
/*
 * fork(): the engine that reads and writes registered memory is a thread of
 * the process that registered it, so a child's copy-on-write pages never
 * take its DMA away as they would a NIC's. Nothing needs doing, so
 * RDMAV_FORK_SAFE and IBV_FORK_SAFE, which make rdma-core call
 * ibv_fork_init, are honoured as rdma-core honours them on a kernel with
 * copy-on-fork: fork is safe, and ibv_is_fork_initialized says it is not
 * needed. (A child cannot use its parent's verbs objects: their engine
 * thread stays in the parent.)
 */
#include "shim.h"

int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base, (void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base, (void)size;
	return 0;
}
