// Values of the rtnetlink ABI (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h, linux/if_addr.h). Glibc's
// module does not export these headers, and they are part of the kernel's stable user-space ABI, so they are
// spelled out here once, with the kernel's names.

enum Kernel {
    static let AF_NETLINK: Int32 = 16
    static let NETLINK_ROUTE: Int32 = 0
    static let SOL_NETLINK: Int32 = 270
    static let NETLINK_ADD_MEMBERSHIP: Int32 = 1
    static let NETLINK_EXT_ACK: Int32 = 11
    static let NETLINK_GET_STRICT_CHK: Int32 = 12

    // nlmsghdr types and flags
    static let NLMSG_NOOP: UInt16 = 1
    static let NLMSG_ERROR: UInt16 = 2
    static let NLMSG_DONE: UInt16 = 3
    static let NLMSG_OVERRUN: UInt16 = 4
    static let NLM_F_REQUEST: UInt16 = 0x01
    static let NLM_F_MULTI: UInt16 = 0x02
    static let NLM_F_ACK: UInt16 = 0x04
    static let NLM_F_DUMP_INTR: UInt16 = 0x10
    static let NLM_F_ROOT: UInt16 = 0x100
    static let NLM_F_MATCH: UInt16 = 0x200
    static let NLM_F_DUMP: UInt16 = NLM_F_ROOT | NLM_F_MATCH

    // rtnetlink message types
    static let RTM_NEWLINK: UInt16 = 16
    static let RTM_DELLINK: UInt16 = 17
    static let RTM_GETLINK: UInt16 = 18
    static let RTM_NEWADDR: UInt16 = 20
    static let RTM_DELADDR: UInt16 = 21
    static let RTM_GETADDR: UInt16 = 22
    static let RTM_NEWROUTE: UInt16 = 24
    static let RTM_DELROUTE: UInt16 = 25
    static let RTM_GETROUTE: UInt16 = 26

    // multicast groups (numbers, for NETLINK_ADD_MEMBERSHIP)
    static let RTNLGRP_LINK: Int32 = 1
    static let RTNLGRP_IPV4_IFADDR: Int32 = 5
    static let RTNLGRP_IPV4_ROUTE: Int32 = 7
    static let RTNLGRP_IPV6_IFADDR: Int32 = 9
    static let RTNLGRP_IPV6_ROUTE: Int32 = 11

    // IFLA_* (ifinfomsg attributes)
    static let IFLA_ADDRESS: UInt16 = 1
    static let IFLA_IFNAME: UInt16 = 3
    static let IFLA_MTU: UInt16 = 4
    static let IFLA_OPERSTATE: UInt16 = 16
    static let IFLA_LINKMODE: UInt16 = 17
    static let IFLA_LINKINFO: UInt16 = 18
    static let IFLA_CARRIER: UInt16 = 33
    static let IFLA_INFO_KIND: UInt16 = 1

    // IFA_* (ifaddrmsg attributes)
    static let IFA_ADDRESS: UInt16 = 1
    static let IFA_LOCAL: UInt16 = 2
    static let IFA_LABEL: UInt16 = 3
    static let IFA_FLAGS: UInt16 = 8

    // RTA_* (rtmsg attributes)
    static let RTA_DST: UInt16 = 1
    static let RTA_OIF: UInt16 = 4
    static let RTA_GATEWAY: UInt16 = 5
    static let RTA_PRIORITY: UInt16 = 6
    static let RTA_TABLE: UInt16 = 15

    static let RT_TABLE_MAIN: UInt32 = 254

    /// Attribute type bits that are flags, not part of the type.
    static let NLA_TYPE_MASK: UInt16 = 0x3FFF

    static let headerLength = 16
    static let ifinfomsgLength = 16
    static let ifaddrmsgLength = 8
    static let rtmsgLength = 12
}
