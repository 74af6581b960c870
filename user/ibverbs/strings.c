/* SPDX-License-Identifier: MIT */
/* libibverbs' helpers without a device: names of enum values, link rates. */
#include <stddef.h>

#include "shim.h"

#define XV_COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	/* The statuses libxroce knows have its values (convert.c). */
	if ((int)status >= IBV_WC_SUCCESS && status <= IBV_WC_GENERAL_ERR)
		return xr_wc_status_str((enum xr_wc_status)status);
	return "unknown";
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const names[] = {
	    [IBV_NODE_CA] = "InfiniBand channel adapter",
	    [IBV_NODE_SWITCH] = "InfiniBand switch",
	    [IBV_NODE_ROUTER] = "InfiniBand router",
	    [IBV_NODE_RNIC] = "iWARP NIC",
	    [IBV_NODE_USNIC] = "usNIC",
	    [IBV_NODE_USNIC_UDP] = "usNIC UDP",
	    [IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if ((int)node_type < 0 || (size_t)node_type >= XV_COUNT(names) || !names[node_type])
		return "unknown";
	return names[node_type];
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const names[] = {
	    [IBV_PORT_NOP] = "PORT_NOP",       [IBV_PORT_DOWN] = "PORT_DOWN",
	    [IBV_PORT_INIT] = "PORT_INIT",     [IBV_PORT_ARMED] = "PORT_ARMED",
	    [IBV_PORT_ACTIVE] = "PORT_ACTIVE", [IBV_PORT_ACTIVE_DEFER] = "PORT_ACTIVE_DEFER",
	};

	if ((size_t)port_state >= XV_COUNT(names))
		return "unknown";
	return names[port_state];
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const names[] = {
	    [IBV_EVENT_CQ_ERR] = "CQ error",
	    [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
	    [IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	    [IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	    [IBV_EVENT_COMM_EST] = "communication established",
	    [IBV_EVENT_SQ_DRAINED] = "send queue drained",
	    [IBV_EVENT_PATH_MIG] = "path migrated",
	    [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	    [IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
	    [IBV_EVENT_PORT_ACTIVE] = "port active",
	    [IBV_EVENT_PORT_ERR] = "port error",
	    [IBV_EVENT_LID_CHANGE] = "LID change",
	    [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	    [IBV_EVENT_SM_CHANGE] = "SM change",
	    [IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	    [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	    [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	    [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	    [IBV_EVENT_GID_CHANGE] = "GID table change",
	    [IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((size_t)event >= XV_COUNT(names) || !names[event])
		return "unknown";
	return names[event];
}

/* Each static rate: its multiple of 2.5 Gb/s (0: none) and its data rate in Mb/s. */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 0, 25781},
    {IBV_RATE_100_GBPS, 0, 103125},   {IBV_RATE_200_GBPS, 0, 206250},
    {IBV_RATE_300_GBPS, 0, 309375},   {IBV_RATE_28_GBPS, 0, 28125},
    {IBV_RATE_50_GBPS, 0, 53125},     {IBV_RATE_400_GBPS, 0, 425000},
    {IBV_RATE_600_GBPS, 0, 637500},   {IBV_RATE_800_GBPS, 0, 850000},
    {IBV_RATE_1200_GBPS, 0, 1275000},
};

int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < XV_COUNT(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mult ? rates[i].mult : -1;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < XV_COUNT(rates); i++)
		if (rates[i].mult && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < XV_COUNT(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < XV_COUNT(rates); i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}
