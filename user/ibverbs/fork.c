/* SPDX-License-Identifier: MIT */
/*
 * fork(): the engine that reads and writes registered memory is a thread of
 * the process that registered it, so a child's copy-on-write pages never
 * take its DMA away as they would a NIC's. Nothing needs doing.
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
