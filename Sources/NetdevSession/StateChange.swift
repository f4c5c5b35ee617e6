/// What changed from the model of one change sequence to the next, by key: the links and devices that were added,
/// changed or removed. The session notes it as it makes each change, so the control service and the monitors
/// follow a change without comparing whole models: with 20,000 links, that comparison for every event was most of
/// a monitored netdevd's work.
///
/// Contract: for a model `next` published after `previous` with `next.changeSequence == previous.changeSequence + 1`,
/// every link index whose entry differs between them is in ``links`` and every device path whose entry differs is
/// in ``devices``, unless ``everything`` is set (an enumeration or a resync replaced the state whole). A key may
/// be named whose entry ended the same (a reader compares the two entries, at O(log n) each).
public struct StateChange: Codable, Sendable, Equatable {
    /// Any link or device may have changed: compare the models whole.
    public var everything: Bool
    /// The interface indexes of the links added, changed or removed, in the order they were touched.
    public var links: [Int32]
    /// The sysfs paths of the devices added, changed or removed, in the order they were touched.
    public var devices: [String]

    /// A change of the named links and devices only (none: only the phase, the configuration or a counter changed).
    public init(links: [Int32] = [], devices: [String] = []) {
        self.everything = false
        self.links = links
        self.devices = devices
    }

    /// Everything may have changed.
    public static let everything = {
        var change = StateChange()
        change.everything = true
        return change
    }()

    /// Notes the link at `index`.
    mutating func touch(link index: Int32) {
        if !everything && !links.contains(index) { links.append(index) }
    }

    /// Notes the device at `path`.
    mutating func touch(device path: String) {
        if !everything && !devices.contains(path) { devices.append(path) }
    }
}
