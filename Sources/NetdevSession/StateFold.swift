import HashTreeCollections
import Syslog

/// How link, address, route and device events change the model's state, with no announcements: the fold that
/// both the live path and the replay after an enumeration use, and that tests compare against.
public enum StateFold {
    /// `model` after `event`; events that are not state changes leave it as it is.
    public static func apply(_ event: Event, to model: Model) -> Model {
        var model = model
        apply(event, to: &model)
        return model
    }

    /// Changes `model` in place (no copy of its dictionaries) as `event` says.
    public static func apply(_ event: Event, to model: inout Model) {
        switch event {
        case .linkChanged(let state):
            if var link = model.links[state.index] {
                guard link.state != state else { break }
                link.state = state
                model.setLink(link, at: state.index)
            } else {
                model.setLink(Link(state: state), at: state.index)
            }
        case .linkRemoved(let index):
            model.setLink(nil, at: index)
        case .addressAdded(let index, let address):
            guard var link = model.links[index] else { break }
            if let existing = link.addresses.firstIndex(where: { sameAddress($0, address) }) {
                guard link.addresses[existing] != address else { break }
                link.addresses[existing] = address
            } else {
                link.addresses.append(address)
            }
            model.setLink(link, at: index)
        case .addressRemoved(let index, let address):
            guard var link = model.links[index], link.addresses.contains(where: { sameAddress($0, address) }) else {
                break
            }
            link.addresses.removeAll { sameAddress($0, address) }
            model.setLink(link, at: index)
        case .defaultRouteAdded(let index, let route):
            guard var link = model.links[index], !link.defaultRoutes.contains(route) else { break }
            link.defaultRoutes.append(route)
            model.setLink(link, at: index)
        case .defaultRouteRemoved(let index, let route):
            guard var link = model.links[index], link.defaultRoutes.contains(route) else { break }
            link.defaultRoutes.removeAll { $0 == route }
            model.setLink(link, at: index)
        case .deviceChanged(let device, _):
            if model.configuration.trackedSubsystems.contains(device.subsystem)
                && model.devices[device.syspath] != device
            {
                model.setDevice(device, at: device.syspath)
            }
        case .deviceRemoved(let syspath):
            if model.devices[syspath] != nil {
                model.setDevice(nil, at: syspath)
            }
        case .deviceMoved(let device, let from):
            if model.devices[from] != nil {
                model.setDevice(nil, at: from)
            }
            if model.configuration.trackedSubsystems.contains(device.subsystem)
                && model.devices[device.syspath] != device
            {
                model.setDevice(device, at: device.syspath)
            }
        default:
            break
        }
    }

    /// Addresses are the same address when family, text and prefix agree (flags and scope may change).
    static func sameAddress(_ lhs: LinkAddress, _ rhs: LinkAddress) -> Bool {
        AddressIdentity(lhs) == AddressIdentity(rhs)
    }

    /// What makes two addresses the same one (family, address, prefix; not scope or flags), as a key: a link with
    /// thousands of addresses (a load balancer's) is compared in one pass, not each address against every other.
    struct AddressIdentity: Hashable {
        let family: AddressFamily
        let address: String
        let prefixLength: Int

        init(_ address: LinkAddress) {
            family = address.family
            self.address = address.address
            prefixLength = address.prefixLength
        }
    }
}

/// Live state changes and what they announce: journal entries for every change, hook runs for link states,
/// devices and the online state.
extension Transition {
    mutating func stateChanged(_ event: Event) {
        switch model.phase {
        case .enumerating, .resyncing:
            if model.buffered.count >= Session.bufferLimit {
                overflowed(.netlink)
            } else {
                model.buffered.append(event)
            }
        case .running, .reloading, .stopping, .stopped, .starting:
            guard let scope = ChangeScope(event) else { return }
            let previous = PreviousState(scope: scope, of: model)
            StateFold.apply(event, to: &model)
            let hooks = (model.phase == .running || model.phase == .reloading) && model.hooksInstalled
            switch scope {
            case .link(let index):
                stateTouched = previous.link(index) != model.links[index]
                change.touch(link: index)
            case .device(let syspath):
                stateTouched = previous.device(syspath) != model.devices[syspath]
                change.touch(device: syspath)
            case .moved(let from, let to):
                stateTouched =
                    previous.device(from) != model.devices[from] || previous.device(to) != model.devices[to]
                change.touch(device: from)
                change.touch(device: to)
            }
            if case .deviceChanged(let device, let action) = event, previous.device(device.syspath) != nil,
                model.devices[device.syspath] != nil
            {
                stateTouched = true
                announceDeviceChange(device, action: action, hooks: hooks)
            }
            if case .deviceMoved(let device, let from) = event, let old = previous.device(from),
                previous.device(device.syspath) == nil, model.devices[device.syspath] != nil
            {
                // One fact, one entry: renamed, not removed and added.
                announceDeviceMove(from: old, to: device, hooks: hooks)
            } else if stateTouched {
                announceChanges(from: previous, hooks: hooks, in: scope)
            } else {
                unchanged = true
            }
        }
    }

    /// Journal entries (and, with `hooks`, hook runs) for what differs between `previous` and now: within
    /// `scope` (the one link or device an event is about), or everywhere (after a resync) when `scope` is `nil`.
    mutating func announceChanges(from previous: PreviousState, hooks: Bool, in scope: ChangeScope? = nil) {
        let indexes: [Int32]
        let paths: [String]
        switch scope {
        case .link(let index):
            indexes = [index]
            paths = []
        case .device(let syspath):
            indexes = []
            paths = [syspath]
        case .moved(let from, let to):
            indexes = []
            paths = [from, to]
        case nil:
            indexes = Set(previous.linkIndexes).union(model.links.keys).sorted()
            paths = Set(previous.devicePaths).union(model.devices.keys).sorted()
        }
        for index in indexes {
            switch (previous.link(index), model.links[index]) {
            case (nil, let link?):
                let ignored = model.configuration.ignores(link.name)
                activity.append(.linkAdded(index: index))
                log(
                    ignored ? .debug : .info, .linkAdded,
                    "\(link.name): added, \(link.operationalState.rawValue)\(addressSuffix(link))", linkFields(link))
                if hooks && !ignored {
                    enqueueLinkRun(link, event: .linkAdded, previousState: nil)
                }
                dispatchAdded(link)
            case (let old?, nil):
                let ignored = model.configuration.ignores(old.name)
                activity.append(.linkRemoved(index: index))
                log(ignored ? .debug : .info, .linkRemoved, "\(old.name): removed", linkFields(old))
                if hooks && !ignored {
                    // A change held for the debounce was never told: the hooks last saw the state before it.
                    let told = model.debouncing.removeValue(forKey: .link(index: index)) ?? old.operationalState
                    enqueueLinkRun(old, event: .linkRemoved, previousState: told)
                }
                dispatchRemoved(old)
            case (let old?, let link?):
                announceLinkChange(from: old, to: link, hooks: hooks)
            case (nil, nil):
                break
            }
        }
        for path in paths {
            switch (previous.device(path), model.devices[path]) {
            // An interface's device is at debug, which the daemon usually drops: its entry is then not made.
            case (nil, let device?):
                let priority = Self.devicePriority(device)
                if makes(priority) {
                    log(
                        priority, .deviceAdded, "\(device.subsystem) device \(device.sysname) added",
                        deviceFields(device))
                }
                if hooks { enqueueDeviceRun(device, event: .deviceAdded) }
            case (let device?, nil):
                let priority = Self.devicePriority(device)
                if makes(priority) {
                    log(
                        priority, .deviceRemoved, "\(device.subsystem) device \(device.sysname) removed",
                        deviceFields(device))
                }
                if hooks { enqueueDeviceRun(device, event: .deviceRemoved) }
            default:
                break
            }
        }
        announceOnlineChange(from: previous.onlineState)
    }

    mutating func announceOnlineChange(from old: OnlineState) {
        let new = model.onlineState
        guard old != new else { return }
        log(
            .notice, .onlineStateChanged, "Online state is now \(new.rawValue) (was \(old.rawValue))",
            [
                LogField(LogField.Name.onlineState, new.rawValue),
                LogField(LogField.Name.previousOnlineState, old.rawValue),
            ]
        )
        if (model.phase == .running || model.phase == .reloading) && model.hooksInstalled {
            enqueueOnlineRun(from: old)
        }
    }

    private mutating func announceLinkChange(from old: Link, to link: Link, hooks: Bool) {
        let ignored = model.configuration.ignores(link.name)
        let priority: LogPriority = ignored ? .debug : .info
        if old.addresses != link.addresses {
            let before = Set(old.addresses.map(StateFold.AddressIdentity.init))
            let after = Set(link.addresses.map(StateFold.AddressIdentity.init))
            for address in link.addresses where !before.contains(StateFold.AddressIdentity(address)) {
                log(
                    priority, .addressAdded, "\(link.name): address \(address.cidr) added",
                    linkFields(link) + [LogField(LogField.Name.address, address.cidr)])
            }
            for address in old.addresses where !after.contains(StateFold.AddressIdentity(address)) {
                log(
                    priority, .addressRemoved, "\(link.name): address \(address.cidr) removed",
                    linkFields(link) + [LogField(LogField.Name.address, address.cidr)])
            }
        }
        for route in link.defaultRoutes where !old.defaultRoutes.contains(route) {
            log(
                priority, .routeAdded, "\(link.name): default route via \(route.gateway ?? "the link") added",
                linkFields(link) + [LogField(LogField.Name.gateway, route.gateway ?? "")])
        }
        for route in old.defaultRoutes where !link.defaultRoutes.contains(route) {
            log(
                priority, .routeRemoved, "\(link.name): default route via \(route.gateway ?? "the link") removed",
                linkFields(link) + [LogField(LogField.Name.gateway, route.gateway ?? "")])
        }
        if old.name != link.name {
            log(
                priority, .linkRenamed, "\(old.name): renamed to \(link.name)",
                linkFields(link) + [LogField(LogField.Name.previousIfname, old.name)])
        }
        let oldState = old.operationalState
        let newState = link.operationalState
        guard oldState != newState else { return }
        activity.append(.linkStateChanged(index: link.index))
        log(
            priority, .linkStateChanged, "\(link.name): \(oldState.rawValue) → \(newState.rawValue)",
            linkFields(link) + [LogField(LogField.Name.previousOperState, oldState.rawValue)]
        )
        dispatchOperationalChange(link)
        guard hooks && !ignored else { return }
        let subject = HookSubject.link(index: link.index)
        if model.configuration.debounceMilliseconds > 0 {
            if model.debouncing[subject] == nil {
                model.debouncing[subject] = oldState
            }
            effects.append(.startTimer(.debounce(subject), milliseconds: model.configuration.debounceMilliseconds))
        } else {
            enqueueLinkRun(link, event: .linkState, previousState: oldState)
        }
    }

    private mutating func announceDeviceChange(_ device: Device, action: String, hooks: Bool) {
        log(.info, .deviceChanged, "\(device.subsystem) device \(device.sysname): \(action)", deviceFields(device))
        if hooks { enqueueDeviceRun(device, event: .deviceChanged) }
    }

    private mutating func announceDeviceMove(from old: Device, to device: Device, hooks: Bool) {
        let what =
            old.sysname == device.sysname ? "moved to \(device.syspath)" : "renamed to \(device.sysname)"
        log(
            Self.devicePriority(device), .deviceMoved, "\(device.subsystem) device \(old.sysname) \(what)",
            deviceFields(device) + [LogField(LogField.Name.previousDevpath, old.syspath)])
        if hooks { enqueueDeviceMove(device, from: old) }
    }

    /// The state held for the debounce interval: run the hooks if it differs from the state before the burst. While
    /// the state is being read again (lost events) nothing is decided: the change stays held, and the resync's end
    /// takes it up (``resumeDebounces()``).
    mutating func debounceExpired(_ subject: HookSubject) {
        guard let before = model.debouncing[subject] else { return }
        switch model.phase {
        case .resyncing, .enumerating:
            return
        case .running, .reloading:
            model.debouncing[subject] = nil
        case .starting, .stopping, .stopped:
            model.debouncing[subject] = nil
            return
        }
        guard case .link(let index) = subject, let link = model.links[index], link.operationalState != before else {
            return
        }
        enqueueLinkRun(link, event: .linkState, previousState: before)
    }

    /// At the end of a resync, the changes held through it: decided now when the debounce is off (a reload may
    /// have turned it off meanwhile), otherwise a full interval from now, as for a change just seen (a timer that
    /// fired during the resync decided nothing). A subject the snapshot changed again has its timer restarted already.
    mutating func resumeDebounces() {
        let interval = model.configuration.debounceMilliseconds
        for subject in model.debouncing.keys.sorted(by: { $0.description < $1.description }) {
            if interval == 0 {
                debounceExpired(subject)
            } else {
                let restart = Effect.startTimer(.debounce(subject), milliseconds: interval)
                if !effects.contains(restart) { effects.append(restart) }
            }
        }
    }

    func linkFields(_ link: Link) -> [LogField] {
        [
            LogField(LogField.Name.ifname, link.name),
            LogField(LogField.Name.ifindex, String(link.index)),
            LogField(LogField.Name.operState, link.operationalState.rawValue),
        ]
    }

    /// A network interface's device (udev's side of an rtnetlink link: subsystem `net` with an `IFINDEX`) is
    /// logged at debug when it comes and goes, because the link's own entries already say so; the journal gets one
    /// entry per fact, not two. Every other device at info.
    static func devicePriority(_ device: Device) -> LogPriority {
        device.subsystem == "net" && device.properties["IFINDEX"] != nil ? .debug : .info
    }

    func deviceFields(_ device: Device) -> [LogField] {
        [LogField(LogField.Name.devpath, device.syspath), LogField(LogField.Name.subsystem, device.subsystem)]
    }

    func addressSuffix(_ link: Link) -> String {
        link.addresses.isEmpty ? "" : " (" + link.addresses.map(\.cidr).joined(separator: ", ") + ")"
    }
}
