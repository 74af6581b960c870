#!/usr/bin/env python3
"""Checks xroce's --json output for tests/e2e/test_json_output.sh.

Each subcommand parses the documents it is given with the json module and
exits 1, saying what is wrong, unless they hold what the subcommand expects:

  stats FILE IFNAME                       an `xroce stats --json` document
  moved BEFORE AFTER IFNAME MESSAGES      frame counters grew by >= MESSAGES,
                                          no malformed frame was dropped
  naks BEFORE AFTER IFNAME COUNTER...     engine NAK counters moved by exactly 1
                                          (the COUNTERs), every other NAK by 0
  qps-idle FILE IFNAME                    a qps document listing no QP
  qps-traffic IFNAME QPN DEST_QPN LOCAL_PSN REMOTE_PSN MESSAGES FILE...
                                          some sample shows the RC QP in RTS
                                          mid-traffic (both PSNs moved), and
                                          every such sample is right: PSNs and
                                          MSN advanced by at most MESSAGES,
                                          acked PSN behind the next PSN, cwnd
                                          within its bounds, srtt_us and
                                          rttvar_us under a second, and some
                                          sample has a round-trip estimate
  gids FILE IFNAME ADDRESS                the IPv4-mapped GID of ADDRESS is listed
  qps-count FILE IFNAME                   prints how many QPs a qps document lists
  status FILE EXIT IFNAME:IFINDEX...      each IFNAME is listed, read, present;
                                          any "error" is about another interface,
                                          and EXIT (xroce's) is 1 exactly then
  watch FILE IFNAME MIN_INTERVALS         JSON lines of stats --watch --json
  documented DOC FILE...                  every member name of every document
                                          (or JSON line) appears in DOC as `name`
"""
import json
import re
import sys

VERSION = 1
PSN_MOD = 1 << 24

XDP_COUNTERS = [
    "passed_non_roce", "redirected", "drop_truncated", "drop_bad_tver", "drop_bad_opcode",
    "drop_bad_length", "drop_unknown_qp", "drop_qp_state", "drop_no_socket", "drop_bad_icrc",
    "acks_absorbed", "acks_to_engine", "dups_answered", "roce_ipv6", "drop_bad_qkey",
    "drop_mcast_unjoined", "drop_bad_pkey", "drop_bad_src", "drop_bad_dst",
]
NAK_COUNTERS = [
    "seq_naks_tx", "seq_naks_rx", "inv_req_naks_tx", "inv_req_naks_rx", "rem_access_naks_tx",
    "rem_access_naks_rx", "rem_op_naks_tx", "rem_op_naks_rx", "rnr_naks_tx", "rnr_naks_rx",
]
ENGINE_COUNTERS = [
    "rx_frames", "rx_bad_icrc", "rx_malformed", "rx_unknown_qp", "rx_bad_state", "rx_bad_pkey",
    "tx_frames", "tx_no_buffer", "retransmits", "timeouts", "dup_requests",
] + NAK_COUNTERS + ["rx_bad_qkey", "rx_no_recv", "uc_dropped_msgs", "rx_bad_src", "rx_bad_dst",
                  "rx_ghost_acks", "rx_bad_response", "rx_dup_deferred",
                  "loopback_frames", "relay_frames", "relay_drops", "syscalls", "sleeps",
                  "sleeps_in_flight", "standby_looks", "mads_rx", "mads_tx",
                  "mads_malformed", "mads_unserved", "cm_unmatched", "cm_forged",
                  "cm_duplicates", "cm_retries", "cm_timeouts", "cm_listens", "tail_probes",
                  "sacks_tx", "sacks_rx", "sr_resends", "sr_placed_ahead", "sr_unplaced",
                  "ecn_marked", "cnps_tx", "cnps_rx"]
QP_MEMBERS = [
    "qpn", "state", "xdp_state", "type", "dest_qpn", "udp_sport", "next_psn", "acked_psn",
    "expected_psn", "msn", "srtt_us", "rttvar_us", "cwnd", "rate_mbps", "sr_requester",
    "sr_responder",
    "engine_sleeping",
    "xdp_absorbs_acks", "xdp_answers_dups", "counters",
]
# The requester's congestion window, in PSNs (XR_CWND_MIN, XR_SEND_WINDOW).
CWND_MIN, CWND_MAX = 8, 512
QP_COUNTERS = [
    "rx_frames", "acks_absorbed", "dups_answered", "tx_frames", "retransmits", "timeouts",
    "dup_requests",
] + NAK_COUNTERS + ["tail_probes", "sacks_tx", "sacks_rx", "sr_resends", "sr_placed_ahead",
                    "ecn_marked", "cnps_tx", "cnps_rx"]
MALFORMED_DROPS = ["drop_truncated", "drop_bad_tver", "drop_bad_opcode", "drop_bad_length",
                   "drop_bad_icrc"]


def fail(message):
    print("json_check: " + message)
    sys.exit(1)


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError as e:
        fail(f"{path} is not one JSON document ({e}):\n{text}")


def check_header(doc, schema, ifname, where):
    if doc.get("schema") != schema or doc.get("version") != VERSION:
        fail(f"{where}: schema {doc.get('schema')!r} version {doc.get('version')!r}, "
             f"expected {schema!r} version {VERSION}")
    if ifname is not None and doc.get("interface") != ifname:
        fail(f"{where}: interface {doc.get('interface')!r}, expected {ifname!r}")


def check_counters(obj, names, where):
    if not isinstance(obj, dict):
        fail(f"{where} is not an object")
    for name in names:
        value = obj.get(name)
        if type(value) is not int or value < 0:
            fail(f"{where}.{name} is {value!r}, expected a counter")


def stats_doc(path, ifname):
    doc = load(path)
    check_header(doc, "xroce-stats", ifname, path)
    check_counters(doc.get("xdp"), XDP_COUNTERS, path + ": xdp")
    check_counters(doc.get("engine"), ENGINE_COUNTERS, path + ": engine")
    by_engine = doc["engine"].get("rx_by_engine")
    if (not isinstance(by_engine, list) or not by_engine or
            any(type(n) is not int or n < 0 for n in by_engine) or
            sum(by_engine) > doc["engine"]["rx_frames"]):
        fail(f"{path}: engine.rx_by_engine is {by_engine!r}, expected a counter per engine "
             f"thread adding up to at most rx_frames ({doc['engine']['rx_frames']})")
    return doc


def cmd_stats(path, ifname):
    stats_doc(path, ifname)


def cmd_moved(before_path, after_path, ifname, messages):
    before, after = stats_doc(before_path, ifname), stats_doc(after_path, ifname)
    messages = int(messages)
    for group, name in [("xdp", "redirected"), ("engine", "rx_frames"), ("engine", "tx_frames")]:
        grew = after[group][name] - before[group][name]
        if grew < messages:
            fail(f"{ifname}: {group}.{name} grew by {grew}, expected >= {messages}")
        print(f"{ifname}: {group}.{name} +{grew}")
    for group, name in [("xdp", n) for n in MALFORMED_DROPS] + \
            [("engine", "rx_malformed"), ("engine", "rx_bad_icrc")]:
        if after[group][name] != 0:
            fail(f"{ifname}: {group}.{name} is {after[group][name]}, expected 0")


def cmd_naks(before_path, after_path, ifname, *moved):
    before, after = stats_doc(before_path, ifname), stats_doc(after_path, ifname)
    for name in NAK_COUNTERS:
        grew = after["engine"][name] - before["engine"][name]
        want = 1 if name in moved else 0
        if grew != want:
            fail(f"{ifname}: engine.{name} grew by {grew}, expected {want}")
    print(f"{ifname}: engine {', '.join(moved)} +1, other NAK counters unchanged")


def qps_doc(path, ifname):
    doc = load(path)
    check_header(doc, "xroce-qps", ifname, path)
    if not isinstance(doc.get("qps"), list):
        fail(f"{path}: qps is not an array")
    for qp in doc["qps"]:
        missing = [m for m in QP_MEMBERS if m not in qp]
        if missing:
            fail(f"{path}: a QP lacks {missing}")
        check_counters(qp["counters"], QP_COUNTERS, path + ": counters")
    return doc


def cmd_qps_idle(path, ifname):
    if qps_doc(path, ifname)["qps"]:
        fail(f"{path}: QPs listed on an idle interface")


def find_qp(path, ifname, qpn):
    return next((qp for qp in qps_doc(path, ifname)["qps"] if qp["qpn"] == qpn), None)


def cmd_qps_count(path, ifname):
    print(len(qps_doc(path, ifname)["qps"]))


def advanced(now, start, most):
    return 0 < (now - start) % PSN_MOD <= most


def cmd_qps_traffic(ifname, qpn, dest_qpn, local_psn, remote_psn, messages, *paths):
    qpn, dest_qpn = int(qpn, 0), int(dest_qpn, 0)
    local_psn, remote_psn, messages = int(local_psn, 0), int(remote_psn, 0), int(messages)
    seen, checked, last, timed = [], 0, None, 0
    for path in paths:
        qp = find_qp(path, ifname, qpn)
        if not qp:
            continue
        seen.append(f"{qp['state']} next {qp['next_psn']:#x}")
        # Mid-traffic: in RTS, and messages went both ways already.
        if qp["state"] != "rts" or qp["next_psn"] == local_psn or \
                qp["expected_psn"] == remote_psn:
            continue
        problems = []
        if (qp["xdp_state"], qp["type"], qp["dest_qpn"]) != ("active", "rc", dest_qpn):
            problems.append(f"xdp_state {qp['xdp_state']}, type {qp['type']}, "
                            f"dest_qpn {qp['dest_qpn']:#x}")
        if not advanced(qp["next_psn"], local_psn, messages):
            problems.append(f"next_psn {qp['next_psn']:#x} vs start {local_psn:#x}")
        # Acknowledged: from start - 1 (nothing yet) up to next_psn - 1.
        if (qp["acked_psn"] - (local_psn - 1)) % PSN_MOD > (qp["next_psn"] - local_psn) % PSN_MOD:
            problems.append(f"acked_psn {qp['acked_psn']:#x} outside [start - 1, next_psn)")
        if not advanced(qp["expected_psn"], remote_psn, messages):
            problems.append(f"expected_psn {qp['expected_psn']:#x} vs peer start {remote_psn:#x}")
        if not 0 < qp["msn"] <= messages:
            problems.append(f"msn {qp['msn']}")
        if not (qp["counters"]["tx_frames"] > 0 and qp["counters"]["rx_frames"] > 0):
            problems.append("tx_frames or rx_frames still 0")
        if not CWND_MIN <= qp["cwnd"] <= CWND_MAX:
            problems.append(f"cwnd {qp['cwnd']} outside [{CWND_MIN}, {CWND_MAX}]")
        # A round trip between two namespaces takes well under a second.
        if qp["srtt_us"] >= 1000000 or qp["rttvar_us"] >= 1000000:
            problems.append(f"srtt_us {qp['srtt_us']}, rttvar_us {qp['rttvar_us']}")
        if qp["srtt_us"] > 0:
            timed += 1
        if problems:
            fail(f"{path}: QP {qpn:#x} in RTS: " + "; ".join(problems))
        checked += 1
        last = qp
    if not checked:
        fail(f"{ifname}: no sample shows QP {qpn:#x} in RTS mid-traffic "
             f"({len(paths)} samples; seen: {seen})")
    if not timed:
        fail(f"{ifname}: QP {qpn:#x} has no round-trip estimate in any of {checked} samples "
             "mid-traffic")
    print(f"{ifname}: QP {qpn:#x} in RTS mid-traffic in {checked} samples, the last: next_psn "
          f"{last['next_psn']:#x} (start {local_psn:#x}), acked_psn {last['acked_psn']:#x}, "
          f"expected_psn {last['expected_psn']:#x} (peer start {remote_psn:#x}), "
          f"msn {last['msn']}, srtt_us {last['srtt_us']} in {timed} samples")


def cmd_gids(path, ifname, address):
    doc = load(path)
    check_header(doc, "xroce-gids", ifname, path)
    octets = [int(o) for o in address.split(".")]
    mapped = "0000:0000:0000:0000:0000:ffff:" + \
        f"{octets[0]:02x}{octets[1]:02x}:{octets[2]:02x}{octets[3]:02x}"
    for i, gid in enumerate(doc["gids"]):
        if gid.get("index") != i:
            fail(f"{path}: GID {i} has index {gid.get('index')!r}")
        if gid.get("gid") == mapped:
            if (gid.get("family"), gid.get("address")) != ("ipv4", address):
                fail(f"{path}: GID {mapped}: family {gid.get('family')!r}, "
                     f"address {gid.get('address')!r}")
            print(f"{ifname}: GID {i} is {mapped} ({address})")
            return
    fail(f"{path}: no GID {mapped} for {address}")


def cmd_status(path, *expected):
    doc = load(path)
    check_header(doc, "xroce-status", None, path)
    listed = {a.get("interface"): a for a in doc.get("attachments", [])}
    mine = set()
    for entry in expected:
        ifname, ifindex = entry.rsplit(":", 1)
        mine.add(ifname)
        a = listed.get(ifname)
        if not a:
            fail(f"{path}: {ifname} not listed")
        if "error" in a:
            fail(f"{path}: {ifname}: error {a['error']!r}")
        if (a.get("ifindex"), a.get("interface_present"), a.get("qps_in_use")) != \
                (int(ifindex), True, 0):
            fail(f"{path}: {ifname}: {a}")
        if a.get("pin_dir") != "/sys/fs/bpf/xroce/" + ifname or \
                not all(type(a.get(k)) is int and a[k] > 0 for k in ("prog_id", "link_id")):
            fail(f"{path}: {ifname}: pins or ids wrong: {a}")
    # Other tests attach and detach meanwhile: only their entries may be unreadable.
    return [a["interface"] for a in listed.values() if "error" in a and a["interface"] not in mine]


def cmd_status_main(path, status, *expected):
    others = cmd_status(path, *expected)
    if int(status) != (1 if others else 0):
        fail(f"{path}: xroce exited {status} with unreadable attachments {others}")
    if others:
        print(f"(other attachments that could not be read: {others})")


def cmd_watch(path, ifname, min_intervals):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) < int(min_intervals):
        fail(f"{path}: {len(lines)} intervals, expected >= {min_intervals}")
    redirected = 0
    for n, line in enumerate(lines, 1):
        try:
            doc = json.loads(line)
        except ValueError as e:
            fail(f"{path}: line {n} is not a JSON document ({e}): {line!r}")
        check_header(doc, "xroce-stats-watch", ifname, f"{path}:{n}")
        if doc.get("interval") != n or not doc.get("seconds", 0) > 0:
            fail(f"{path}:{n}: interval {doc.get('interval')!r}, seconds {doc.get('seconds')!r}")
        for group, names in (("xdp", XDP_COUNTERS), ("engine", ENGINE_COUNTERS)):
            for name, moved in doc.get(group, {}).items():
                if name not in names or moved.get("delta", 0) <= 0 or \
                        abs(moved["delta"] / doc["seconds"] - moved["per_second"]) > \
                        max(1.0, moved["per_second"] * 0.01):
                    fail(f"{path}:{n}: {group}.{name} = {moved}")
        redirected += doc.get("xdp", {}).get("redirected", {}).get("delta", 0)
    if not redirected:
        fail(f"{path}: redirected never moved during the traffic")
    print(f"{ifname}: {len(lines)} JSON intervals, {redirected} frames redirected in them")


def member_names(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from member_names(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from member_names(inner)


def cmd_documented(doc_path, *paths):
    with open(doc_path, encoding="utf-8") as f:
        documented = set(re.findall(r"`([a-z0-9_-]+)`", f.read()))
    names = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        docs = [json.loads(line) for line in text.splitlines()] if path.endswith(".jsonl") \
            else [json.loads(text)]
        for doc in docs:
            names.update(member_names(doc))
            names.add(doc["schema"])
    missing = sorted(names - documented)
    if missing:
        fail(f"{doc_path} does not describe {missing}")
    print(f"all {len(names)} member names and schemas are described in {doc_path}")


COMMANDS = {
    "stats": cmd_stats, "moved": cmd_moved, "naks": cmd_naks, "qps-idle": cmd_qps_idle,
    "qps-count": cmd_qps_count, "qps-traffic": cmd_qps_traffic, "gids": cmd_gids,
    "status": cmd_status_main, "watch": cmd_watch, "documented": cmd_documented,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        fail("usage: json_check.py " + "|".join(COMMANDS) + " ARGS...")
    COMMANDS[sys.argv[1]](*sys.argv[2:])
