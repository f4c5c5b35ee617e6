import HashTreeCollections

/// The one link or device a state event is about (a moved device: its old path and its new one).
enum ChangeScope {
    case link(Int32)
    case device(String)
    case moved(from: String, to: String)

    init?(_ event: Event) {
        switch event {
        case .linkChanged(let state): self = .link(state.index)
        case .linkRemoved(let index), .addressAdded(let index, _), .addressRemoved(let index, _),
            .defaultRouteAdded(let index, _), .defaultRouteRemoved(let index, _):
            self = .link(index)
        case .deviceChanged(let device, _): self = .device(device.syspath)
        case .deviceRemoved(let syspath): self = .device(syspath)
        case .deviceMoved(let device, let from): self = .moved(from: from, to: device.syspath)
        default: return nil
        }
    }
}

/// What announcements compare against: the part of the model before a change that the change can have touched
/// (one link or device for a live event, everything for a resync), and the online state. A live event's part is
/// kept as plain optionals, not a table: a table of one costs an allocation and its generic release per event.
struct PreviousState {
    /// Every link and device before a resync; `nil` for a live event.
    private let everything: (links: TreeDictionary<Int32, Link>, devices: TreeDictionary<String, Device>)?
    /// A live link event's link before it, by index.
    private let scopedLink: (index: Int32, link: Link?)?
    /// A live device event's devices before it (a move's old and new paths), by path.
    private let scopedDevices: (first: (path: String, device: Device?), second: (path: String, device: Device?)?)?
    let onlineState: OnlineState

    init(scope: ChangeScope, of model: Model) {
        everything = nil
        switch scope {
        case .link(let index):
            scopedLink = (index, model.links[index])
            scopedDevices = nil
        case .device(let syspath):
            scopedLink = nil
            scopedDevices = ((syspath, model.devices[syspath]), nil)
        case .moved(let from, let to):
            scopedLink = nil
            scopedDevices = ((from, model.devices[from]), (to, model.devices[to]))
        }
        onlineState = model.onlineState
    }

    init(everythingIn model: Model) {
        everything = (model.links, model.devices)
        scopedLink = nil
        scopedDevices = nil
        onlineState = model.onlineState
    }

    /// The link at `index` before; only the scope's link is known for a live event.
    func link(_ index: Int32) -> Link? {
        if let everything { return everything.links[index] }
        guard let scopedLink, scopedLink.index == index else { return nil }
        return scopedLink.link
    }

    /// The device at `path` before; only the scope's devices are known for a live event.
    func device(_ path: String) -> Device? {
        if let everything { return everything.devices[path] }
        guard let scopedDevices else { return nil }
        if scopedDevices.first.path == path { return scopedDevices.first.device }
        if let second = scopedDevices.second, second.path == path { return second.device }
        return nil
    }

    /// The link indexes and device paths before a resync (none for a live event).
    var linkIndexes: [Int32] { everything.map { Array($0.links.keys) } ?? [] }
    var devicePaths: [String] { everything.map { Array($0.devices.keys) } ?? [] }
}
