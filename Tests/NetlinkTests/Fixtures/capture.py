#!/usr/bin/env python3
"""Capture rtnetlink byte fixtures from the running kernel for the netlink parser's unit tests.

Run it from the repository root, inside the project's harness (never on a real host: it
refuses to run unless the namespace it finds is fresh, i.e. holds only `lo`):

    Tests/Harness/in-netns.sh python3 Tests/NetlinkTests/Fixtures/capture.py

It builds a deterministic set of links and addresses, saves the raw bytes of every recv()
of four dump requests and of selected multicast notifications, the matching `ip -j` output,
and checks the key values that README.md documents, so a regeneration that would make the
README wrong fails instead. Standard library only: socket (AF_NETLINK, NETLINK_ROUTE), struct.

Optional argument: the output directory (default: the directory of this file).
"""

import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

# --- Constants (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h, linux/if_addr.h) --------

NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK, NLM_F_ECHO, NLM_F_DUMP_INTR = 0x1, 0x2, 0x4, 0x8, 0x10
NLM_F_DUMP = 0x300  # NLM_F_ROOT | NLM_F_MATCH

RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
RTM_NEWADDR, RTM_DELADDR, RTM_GETADDR = 20, 21, 22
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26
TYPE_NAMES = {2: "NLMSG_ERROR", 3: "NLMSG_DONE", 16: "RTM_NEWLINK", 17: "RTM_DELLINK",
              20: "RTM_NEWADDR", 21: "RTM_DELADDR", 24: "RTM_NEWROUTE", 25: "RTM_DELROUTE"}

# Multicast groups, as the legacy bind() bitmask (1 << (RTNLGRP_x - 1)).
RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE = 1, 5, 7
RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE = 9, 11
MONITOR_GROUPS = 0
for _g in (RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE):
    MONITOR_GROUPS |= 1 << (_g - 1)

IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_LINK, IFLA_OPERSTATE, IFLA_LINKINFO = 1, 3, 4, 5, 16, 18
IFLA_INFO_KIND = 1
IFA_ADDRESS, IFA_LOCAL, IFA_LABEL, IFA_FLAGS = 1, 2, 3, 8
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_PREFSRC, RTA_TABLE = 1, 4, 5, 6, 7, 15

# One recv() buffer. The kernel sizes later dump datagrams after the largest recvmsg() buffer
# it has seen (capped at 32 KiB); the first one is built during sendmsg() and is smaller.
RECV_BUF = 32768

HDR = struct.Struct("=IHHII")           # struct nlmsghdr: len, type, flags, seq, pid
IFINFOMSG = struct.Struct("=BxHiII")    # family, pad, type, index, flags, change
IFADDRMSG = struct.Struct("=BBBBI")     # family, prefixlen, flags, scope, index
RTMSG = struct.Struct("=BBBBBBBBI")     # family, dst_len, src_len, tos, table, protocol, scope, type, flags
RTATTR = struct.Struct("=HH")           # len, type


def align4(n):
    return (n + 3) & ~3


# --- Parsing, enough to pick datagrams and check values ---------------------------------------

def messages(datagram):
    """Yield (type, flags, seq, pid, payload) for every netlink message in one datagram."""
    off = 0
    while off + HDR.size <= len(datagram):
        length, mtype, flags, seq, pid = HDR.unpack_from(datagram, off)
        if length < HDR.size or off + length > len(datagram):
            raise ValueError(f"bad nlmsg_len {length} at offset {off}")
        yield mtype, flags, seq, pid, datagram[off + HDR.size:off + length]
        off += align4(length)


def attrs(buf):
    """Map attribute type (nested flag and byte-order flag masked off) to its payload."""
    out, off = {}, 0
    while off + RTATTR.size <= len(buf):
        length, atype = RTATTR.unpack_from(buf, off)
        if length < RTATTR.size:
            break
        out[atype & 0x3FFF] = buf[off + RTATTR.size:off + length]
        off += align4(length)
    return out


def cstr(b):
    return b.split(b"\0", 1)[0].decode()


def u32(b):
    return struct.unpack("=I", b[:4])[0]


def ip(family, b):
    return socket.inet_ntop(family, b)


def decode(mtype, payload):
    """A dict of the key values of one RTM_* message (for checks and the summary)."""
    if mtype in (RTM_NEWLINK, RTM_DELLINK):
        family, iftype, index, flags, change = IFINFOMSG.unpack_from(payload)
        a = attrs(payload[IFINFOMSG.size:])
        d = {"index": index, "flags": flags, "change": change}
        if IFLA_IFNAME in a: d["name"] = cstr(a[IFLA_IFNAME])
        if IFLA_ADDRESS in a: d["mac"] = a[IFLA_ADDRESS].hex(":")
        if IFLA_MTU in a: d["mtu"] = u32(a[IFLA_MTU])
        if IFLA_OPERSTATE in a: d["operstate"] = a[IFLA_OPERSTATE][0]
        if IFLA_LINK in a: d["link"] = u32(a[IFLA_LINK])
        if IFLA_LINKINFO in a:
            info = attrs(a[IFLA_LINKINFO])
            if IFLA_INFO_KIND in info: d["kind"] = cstr(info[IFLA_INFO_KIND])
        return d
    if mtype in (RTM_NEWADDR, RTM_DELADDR):
        family, plen, flags, scope, index = IFADDRMSG.unpack_from(payload)
        a = attrs(payload[IFADDRMSG.size:])
        d = {"family": family, "prefixlen": plen, "scope": scope, "index": index,
             "flags": u32(a[IFA_FLAGS]) if IFA_FLAGS in a else flags}
        if IFA_ADDRESS in a: d["address"] = ip(family, a[IFA_ADDRESS])
        if IFA_LOCAL in a: d["local"] = ip(family, a[IFA_LOCAL])
        if IFA_LABEL in a: d["label"] = cstr(a[IFA_LABEL])
        return d
    if mtype in (RTM_NEWROUTE, RTM_DELROUTE):
        family, dst_len, src_len, tos, table, proto, scope, rtype, flags = RTMSG.unpack_from(payload)
        a = attrs(payload[RTMSG.size:])
        d = {"family": family, "dst_len": dst_len, "table": u32(a[RTA_TABLE]) if RTA_TABLE in a else table,
             "protocol": proto, "scope": scope, "type": rtype, "flags": flags}
        if RTA_DST in a: d["dst"] = ip(family, a[RTA_DST])
        if RTA_GATEWAY in a: d["gateway"] = ip(family, a[RTA_GATEWAY])
        if RTA_OIF in a: d["oif"] = u32(a[RTA_OIF])
        if RTA_PRIORITY in a: d["priority"] = u32(a[RTA_PRIORITY])
        if RTA_PREFSRC in a: d["prefsrc"] = ip(family, a[RTA_PREFSRC])
        return d
    if mtype in (NLMSG_DONE, NLMSG_ERROR):
        return {"error": struct.unpack("=i", payload[:4])[0]}
    return {}


def summary(datagram):
    parts = []
    for mtype, flags, seq, pid, payload in messages(datagram):
        parts.append(f"{TYPE_NAMES.get(mtype, mtype)} flags=0x{flags:x} {decode(mtype, payload)}")
    return f"{len(datagram)} bytes: " + "; ".join(parts)


# --- Sockets ------------------------------------------------------------------------------------

def nl_socket(portid, groups=0):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    # A fixed port id (instead of 0 = kernel-chosen) makes nlmsg_pid in the dump replies stable.
    s.bind((portid, groups))
    return s


def recv_datagram(s):
    data, _, msg_flags, _ = s.recvmsg(RECV_BUF)
    if msg_flags & socket.MSG_TRUNC:
        raise RuntimeError(f"datagram larger than {RECV_BUF} bytes was truncated")
    return data


def dump(request_type, header, seq, portid):
    """Send one NLM_F_DUMP request; return the list of reply datagrams up to NLMSG_DONE."""
    for _attempt in range(5):
        s = nl_socket(portid)
        req = HDR.pack(HDR.size + len(header), request_type, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + header
        s.sendto(req, (0, 0))
        datagrams, done, interrupted = [], False, False
        while not done:
            data = recv_datagram(s)
            datagrams.append(data)
            for mtype, flags, rseq, _pid, payload in messages(data):
                if rseq != seq:
                    raise RuntimeError(f"reply seq {rseq} != request seq {seq}")
                if flags & NLM_F_DUMP_INTR:
                    interrupted = True
                if mtype == NLMSG_ERROR:
                    raise OSError(-struct.unpack("=i", payload[:4])[0], "dump request failed")
                if mtype == NLMSG_DONE:
                    done = True
        s.close()
        if not interrupted:   # NLM_F_DUMP_INTR: the table changed during the dump; take it again
            return datagrams
    raise RuntimeError("dump kept being interrupted")


def drain(s, quiet=0.3):
    """All datagrams that arrive until `quiet` seconds pass without one."""
    out = []
    while select.select([s], [], [], quiet)[0]:
        out.append(recv_datagram(s))
    return out


# --- Helpers ------------------------------------------------------------------------------------

def sh(*cmd):
    subprocess.run(cmd, check=True)


def ip_json(*args):
    return subprocess.run(("ip", "-j") + args, check=True, capture_output=True, text=True).stdout


def wait_for(pred, what, timeout=10.0):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def check(cond, what):
    if not cond:
        raise AssertionError(f"unexpected fixture content: {what}")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

    # Safety: this script creates and deletes links. Run it only in a fresh namespace.
    names = [l["ifname"] for l in json.loads(ip_json("link", "show"))]
    if names != ["lo"]:
        sys.exit(f"capture.py: refusing to run: this network namespace has {names}, expected only ['lo']; "
                 "run it under Tests/Harness/in-netns.sh")
    if os.environ.get("NETDEVD_TEST_HARNESS") != "1":
        print("capture.py: note: not under Tests/Harness/in-netns.sh (no udevd, no journald)", file=sys.stderr)

    # --- The deterministic state for the dumps ---
    # Fixed ifindexes and MACs: without `address`, udev's 99-default.link (MACAddressPolicy=
    # persistent) replaces random MACs asynchronously, which would also add notifications.
    sh("ip", "link", "add", "veth0", "index", "2", "address", "02:00:00:00:00:01", "mtu", "1400",
       "type", "veth", "peer", "name", "veth1", "index", "3", "address", "02:00:00:00:00:02")
    sh("ip", "tuntap", "add", "dev", "tap0", "mode", "tap")        # TUNSETIFF: gets the next index, 4
    sh("udevadm", "settle")                                         # udev may set tap0's MAC; then ours wins
    sh("ip", "link", "set", "tap0", "address", "02:00:00:00:00:03")
    sh("ip", "addr", "add", "192.0.2.10/24", "dev", "veth0")
    sh("ip", "addr", "add", "2001:db8::10/64", "dev", "veth0", "nodad")
    sh("ip", "link", "set", "veth0", "up")
    sh("ip", "link", "set", "veth1", "up")
    sh("ip", "route", "add", "default", "via", "192.0.2.1", "dev", "veth0", "metric", "100")
    sh("ip", "-6", "route", "add", "default", "via", "2001:db8::1", "dev", "veth0", "metric", "200")
    sh("udevadm", "settle")
    # Carrier and operstate follow asynchronously (linkwatch), and the fe80:: link-local
    # addresses are tentative until DAD ends (~1-2 s): wait for a settled state.
    wait_for(lambda: all(l.get("operstate") == "UP" for l in json.loads(ip_json("link", "show"))
                         if l["ifname"] in ("veth0", "veth1")), "veth0/veth1 operstate UP")
    def ipv6_settled():
        addrs = {l["ifname"]: l.get("addr_info", []) for l in json.loads(ip_json("-6", "addr", "show"))}
        return all(any(a.get("scope") == "link" for a in addrs.get(n, [])) for n in ("veth0", "veth1")) \
            and not any(a.get("tentative") for infos in addrs.values() for a in infos)
    wait_for(ipv6_settled, "IPv6 link-local addresses on veth0/veth1 with DAD finished")

    # --- Dumps (one socket each, fixed seq and port id) ---
    af_unspec, af_inet, af_inet6 = socket.AF_UNSPEC, socket.AF_INET, socket.AF_INET6
    dumps = {
        "link-dump.bin": dump(RTM_GETLINK, IFINFOMSG.pack(af_unspec, 0, 0, 0, 0), 1, 10001),
        "addr-dump.bin": dump(RTM_GETADDR, IFADDRMSG.pack(af_unspec, 0, 0, 0, 0), 2, 10002),
        "route-dump.bin": dump(RTM_GETROUTE, RTMSG.pack(af_inet, 0, 0, 0, 0, 0, 0, 0, 0), 3, 10003),
        "route6-dump.bin": dump(RTM_GETROUTE, RTMSG.pack(af_inet6, 0, 0, 0, 0, 0, 0, 0, 0), 4, 10004),
    }
    ip_link = ip_json("link", "show")
    ip_addr = ip_json("addr", "show")

    # --- Notifications ---
    mon = nl_socket(20001, MONITOR_GROUPS)
    steps = [
        ("create vx0/vx1", ["ip", "link", "add", "vx0", "address", "02:00:00:00:00:10", "type", "veth",
                            "peer", "name", "vx1", "address", "02:00:00:00:00:11"]),
        ("vx0 up", ["ip", "link", "set", "vx0", "up"]),
        ("add 198.51.100.7/24", ["ip", "addr", "add", "198.51.100.7/24", "dev", "vx0"]),
        ("del 198.51.100.7/24", ["ip", "addr", "del", "198.51.100.7/24", "dev", "vx0"]),
        ("add 2001:db8:1::7/64", ["ip", "addr", "add", "2001:db8:1::7/64", "dev", "vx0", "nodad"]),
        ("add route 203.0.113.0/24", ["ip", "route", "add", "203.0.113.0/24", "dev", "vx0"]),
        ("delete vx0", ["ip", "link", "del", "vx0"]),
    ]
    events = []   # (step, datagram)
    for label, cmd in steps:
        sh(*cmd)
        sh("udevadm", "settle")
        events += [(label, d) for d in drain(mon)]
    mon.close()

    def first(step, pred):
        for label, d in events:
            if label == step and any(pred(t, decode(t, p)) for t, _f, _s, _pid, p in messages(d)):
                return d
        raise RuntimeError(f"no notification matched in step {step!r}")

    notifications = {
        "newlink.bin": first("create vx0/vx1", lambda t, m: t == RTM_NEWLINK and m.get("name") == "vx0"),
        "newaddr4.bin": first("add 198.51.100.7/24",
                              lambda t, m: t == RTM_NEWADDR and m.get("local") == "198.51.100.7"),
        "deladdr4.bin": first("del 198.51.100.7/24",
                              lambda t, m: t == RTM_DELADDR and m.get("local") == "198.51.100.7"),
        "newaddr6.bin": first("add 2001:db8:1::7/64",
                              lambda t, m: t == RTM_NEWADDR and m.get("address") == "2001:db8:1::7"),
        "newroute.bin": first("add route 203.0.113.0/24",
                              lambda t, m: t == RTM_NEWROUTE and m.get("dst") == "203.0.113.0"),
        "dellink.bin": first("delete vx0", lambda t, m: t == RTM_DELLINK and m.get("name") == "vx0"),
    }

    # --- Write ---
    os.makedirs(outdir, exist_ok=True)
    for name, datagrams in dumps.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(b"".join(datagrams))
    for name, datagram in notifications.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(datagram)
    for name, text in (("ip-link.json", ip_link), ("ip-addr.json", ip_addr)):
        with open(os.path.join(outdir, name), "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    # --- Report ---
    print(f"kernel {os.uname().release}; recv buffer {RECV_BUF}; written to {outdir}")
    for name, datagrams in dumps.items():
        print(f"== {name}: {len(datagrams)} datagrams, sizes {[len(d) for d in datagrams]}")
        for d in datagrams:
            for mtype, flags, seq, pid, payload in messages(d):
                print(f"   {TYPE_NAMES.get(mtype, mtype)} flags=0x{flags:x} seq={seq} pid={pid} {decode(mtype, payload)}")
    print("== all notifications, in order")
    for label, d in events:
        print(f"   [{label}] {summary(d)}")
    for name, d in notifications.items():
        print(f"== {name}: {summary(d)}")

    # --- Checks of what README.md documents ---
    links = {m["index"]: m for d in dumps["link-dump.bin"] for t, _f, _s, _p, pl in messages(d)
             if t == RTM_NEWLINK for m in [decode(t, pl)]}
    check(sorted(links) == [1, 2, 3, 4], f"ifindexes {sorted(links)}")
    want = {1: ("lo", "00:00:00:00:00:00", 65536, 0, None),
            2: ("veth0", "02:00:00:00:00:01", 1400, 6, "veth"),
            3: ("veth1", "02:00:00:00:00:02", 1500, 6, "veth"),
            4: ("tap0", "02:00:00:00:00:03", 1500, 2, "tun")}
    for index, (name, mac, mtu, oper, kind) in want.items():
        m = links[index]
        got = (m.get("name"), m.get("mac"), m.get("mtu"), m.get("operstate"), m.get("kind"))
        check(got == (name, mac, mtu, oper, kind), f"link {index}: {got}")
    check(links[2]["flags"] == 0x11043 and links[3]["flags"] == 0x11043 and links[4]["flags"] == 0x1002
          and links[1]["flags"] == 0x10049, "link flags " + str({i: hex(m["flags"]) for i, m in links.items()}))

    def all_msgs(datagrams):
        return [(t, f, decode(t, pl)) for d in datagrams for t, f, _s, _p, pl in messages(d)]

    for name, datagrams in dumps.items():   # every dump message, NLMSG_DONE included, has NLM_F_MULTI
        check(all(f & NLM_F_MULTI for _t, f, _m in all_msgs(datagrams)), f"{name}: NLM_F_MULTI missing")
        check(all_msgs(datagrams)[-1][0] == NLMSG_DONE, f"{name}: does not end with NLMSG_DONE")
    addrs = sorted((m["index"], m.get("address"), m["prefixlen"], m["scope"], m["flags"])
                   for t, _f, m in all_msgs(dumps["addr-dump.bin"]) if t == RTM_NEWADDR)
    check(addrs == [(1, "127.0.0.1", 8, 254, 0x80), (1, "::1", 128, 254, 0x80),
                    (2, "192.0.2.10", 24, 0, 0x80), (2, "2001:db8::10", 64, 0, 0x82),
                    (2, "fe80::ff:fe00:1", 64, 253, 0x80), (3, "fe80::ff:fe00:2", 64, 253, 0x80)], f"addresses {addrs}")
    for name, gw, prio in (("route-dump.bin", "192.0.2.1", 100), ("route6-dump.bin", "2001:db8::1", 200)):
        defaults = [m for t, _f, m in all_msgs(dumps[name]) if t == RTM_NEWROUTE and m["dst_len"] == 0]
        check(len(defaults) == 1 and (defaults[0].get("gateway"), defaults[0].get("oif"), defaults[0].get("priority"),
                                      defaults[0]["table"], defaults[0]["protocol"]) == (gw, 2, prio, 254, 3),
              f"{name}: default route {defaults}")

    def only(name):
        ms = all_msgs([notifications[name]])
        check(len(ms) == 1, f"{name}: {len(ms)} messages in the datagram")
        return ms[0]
    t, _f, m = only("newlink.bin")
    check((t, m["index"], m["name"], m["mac"], m["operstate"], m.get("link"), m.get("kind"))
          == (RTM_NEWLINK, 6, "vx0", "02:00:00:00:00:10", 2, 5, "veth"), f"newlink.bin {m}")
    for name, want_t in (("newaddr4.bin", RTM_NEWADDR), ("deladdr4.bin", RTM_DELADDR)):
        t, _f, m = only(name)
        check((t, m["index"], m.get("local"), m["prefixlen"], m["scope"], m["flags"])
              == (want_t, 6, "198.51.100.7", 24, 0, 0x80), f"{name} {m}")
    t, _f, m = only("newaddr6.bin")
    check((t, m["index"], m.get("address"), m["prefixlen"], m["scope"], m["flags"])
          == (RTM_NEWADDR, 6, "2001:db8:1::7", 64, 0, 0x82), f"newaddr6.bin {m}")
    t, f, m = only("newroute.bin")
    check((t, m.get("dst"), m["dst_len"], m.get("oif"), m["table"], m["protocol"], m["scope"], m.get("gateway"))
          == (RTM_NEWROUTE, "203.0.113.0", 24, 6, 254, 3, 253, None), f"newroute.bin {m}")
    t, _f, m = only("dellink.bin")
    check((t, m["index"], m["name"]) == (RTM_DELLINK, 6, "vx0"), f"dellink.bin {m}")
    print("all checks passed")


if __name__ == "__main__":
    main()
