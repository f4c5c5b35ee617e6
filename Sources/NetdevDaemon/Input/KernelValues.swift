public import NetdevSession
public import Netlink
public import Udev

/// Turns the adapters' values into the session's: the one place where netlink and udev words meet the
/// session's. Contract: total (every value an adapter can produce converts, none traps), so whatever the kernel
/// or udev sends reaches the session as an event; public for the fuzz targets, which check exactly that.
public enum KernelValues {
    static func linkState(_ link: NetlinkLink) -> LinkState {
        LinkState(
            index: link.index,
            name: link.name,
            kind: link.kind,
            macAddress: link.macAddress,
            mtu: link.mtu.map(Int.init),
            isUp: link.flags.contains(.up),
            hasLowerUp: link.flags.contains(.lowerUp),
            isLoopback: link.flags.contains(.loopback),
            kernelState: kernelState(link.operationalState)
        )
    }

    static func kernelState(_ state: Netlink.OperationalState) -> KernelOperationalState {
        switch state {
        case .unknown: .unknown
        case .notPresent: .notPresent
        case .down: .down
        case .lowerLayerDown: .lowerLayerDown
        case .testing: .testing
        case .dormant: .dormant
        case .up: .up
        }
    }

    static func address(_ address: NetlinkAddress) -> LinkAddress {
        LinkAddress(
            family: family(address.family),
            address: address.address,
            prefixLength: Int(address.prefixLength),
            scope: Int(address.scope),
            isTentative: address.flags.contains(.tentative) || address.flags.contains(.dadFailed)
        )
    }

    static func family(_ family: Netlink.AddressFamily) -> NetdevSession.AddressFamily {
        family == .ipv4 ? .ipv4 : .ipv6
    }

    static func defaultRoute(_ route: NetlinkRoute) -> DefaultRoute? {
        guard route.isDefault, route.type == 1 else { return nil }
        return DefaultRoute(family: family(route.family), gateway: route.gateway, metric: route.metric.map(Int.init))
    }

    /// The session event a netlink message means (none for routes that are not main-table defaults).
    public static func event(_ message: RouteMessage) -> Event? {
        switch message {
        case .newLink(let link):
            return .linkChanged(linkState(link))
        case .deletedLink(let link):
            return .linkRemoved(index: link.index)
        case .newAddress(let address):
            return .addressAdded(index: address.interfaceIndex, self.address(address))
        case .deletedAddress(let address):
            return .addressRemoved(index: address.interfaceIndex, self.address(address))
        case .newRoute(let route):
            guard let index = route.outputInterfaceIndex, let value = defaultRoute(route) else { return nil }
            return .defaultRouteAdded(index: index, value)
        case .deletedRoute(let route):
            guard let index = route.outputInterfaceIndex, let value = defaultRoute(route) else { return nil }
            return .defaultRouteRemoved(index: index, value)
        }
    }

    /// The session's device for a udev device (no subsystem reads as the empty one).
    public static func device(_ device: UdevDevice) -> Device {
        Device(
            syspath: device.syspath,
            sysname: device.sysname,
            subsystem: device.subsystem ?? "",
            devtype: device.devtype,
            devnode: device.devnode,
            driver: device.driver,
            properties: device.properties
        )
    }

    /// The session event a udev event means.
    public static func event(_ device: UdevDevice) -> Event {
        if device.action == "remove" {
            return .deviceRemoved(syspath: device.syspath)
        }
        if device.action == "move", let from = movedFrom(device) {
            return .deviceMoved(self.device(device), fromSyspath: from)
        }
        return .deviceChanged(self.device(device), action: device.action ?? "change")
    }

    /// The sysfs path a moved device had: its `DEVPATH_OLD` under the mount point its own path has (the path
    /// less its `DEVPATH`); `nil` when the event does not say.
    static func movedFrom(_ device: UdevDevice) -> String? {
        guard let old = device.properties["DEVPATH_OLD"], old.hasPrefix("/") else { return nil }
        let path = device.properties["DEVPATH"] ?? ""
        let root =
            !path.isEmpty && device.syspath.hasSuffix(path) ? String(device.syspath.dropLast(path.count)) : "/sys"
        return root + old
    }

    /// A snapshot from a netlink dump and a udev enumeration.
    static func snapshot(_ dump: NetlinkSnapshot, devices: [UdevDevice]) -> Snapshot {
        var links: [Int32: Link] = [:]
        for link in dump.links {
            links[link.index] = Link(state: linkState(link))
        }
        for address in dump.addresses {
            links[address.interfaceIndex]?.addresses.append(self.address(address))
        }
        for route in dump.routes {
            if let index = route.outputInterfaceIndex, let value = defaultRoute(route) {
                links[index]?.defaultRoutes.append(value)
            }
        }
        return Snapshot(
            links: links.values.sorted { $0.index < $1.index }, devices: devices.map(device),
            changedWhileRead: dump.changedWhileRead)
    }
}
