internal import CUdev
import Locking
public import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// Which uevents a monitor listens to.
public enum UdevSource: String, Sendable, Codable, CaseIterable {
    /// Events after udevd has processed them (rules applied, properties such as `ID_NET_NAME_PATH` added).
    /// Nothing arrives unless `systemd-udevd` runs.
    case udev
    /// Raw kernel uevents, before udevd; always delivered, without udev's properties.
    case kernel
    /// `udev` when udevd runs (something listens on `/run/udev/control`: ``UdevdStatus``), otherwise `kernel`.
    case auto

    /// The concrete source `auto` stands for on this system now.
    public static func resolvedAuto() -> UdevSource {
        UdevdStatus.probe() == .running ? .udev : .kernel
    }
}

/// What one read of a ``UdevMonitor`` found.
public struct UdevBatch: Sendable, Equatable {
    /// The devices received, in the order the kernel (or udevd) sent them.
    public var devices: [UdevDevice]
    /// `true` when events were lost because the receive buffer was full (ENOBUFS): the caller must re-enumerate.
    public var overflowed: Bool
    /// `true` when the monitor had nothing more to read; `false` when the read stopped at its limit (or the
    /// batch was made, not read).
    public var drained = false

    /// A batch of these results.
    public init(devices: [UdevDevice] = [], overflowed: Bool = false) {
        self.devices = devices
        self.overflowed = overflowed
    }

    /// The devices a read appended, with what else it met.
    public init(devices: [UdevDevice], read: UdevRead) {
        self.init(devices: devices, overflowed: read.overflowed)
        drained = read.drained
    }
}

/// A udev monitor: uevents of chosen subsystems from udevd or the kernel, as ``UdevDevice`` values.
///
/// The socket is non-blocking: wrap ``fileDescriptor`` in a level-triggered read source and call
/// ``readAvailable(upTo:)`` when it fires; it reads the pending events (at most as many as asked; the source fires
/// again for the rest) and reports an overflow (ENOBUFS) in the batch, never as silence. The receive buffer is raised
/// to 128 MiB by default (libudev uses SO_RCVBUFFORCE when it may).
///
/// The source can be changed while it runs (``switchSource(to:)``): the monitor then listens on a new socket.
public final class UdevMonitor: Sendable {
    /// The source in use: `udev` or `kernel`, never `auto` (which is resolved when the monitor is made).
    public var source: UdevSource {
        handle.withLock { $0.source }
    }
    /// The subsystems it listens to; empty means all. The kernel (or udevd) filters them out before they are
    /// copied to netdevd, with a socket filter that libudev installs.
    public var subsystems: [String] {
        handle.withLock { $0.subsystems }
    }
    /// The monitor's socket, for a Dispatch read source. Owned by the monitor; it changes with the source.
    public var fileDescriptor: Int32 {
        handle.withLock { udev_monitor_get_fd($0.monitor) }
    }
    /// Whether the receive buffer could be raised to the size asked for (it needs CAP_NET_ADMIN past rmem_max).
    public let receiveBufferRaised: Bool

    private let receiveBufferBytes: Int32
    private let handle: Locked<MonitorHandle>

    /// Opens a monitor of `source` for `subsystems` (all when empty) and starts receiving.
    public init(
        source: UdevSource = .auto,
        subsystems: [String] = [],
        receiveBufferBytes: Int32 = 128 * 1024 * 1024
    ) throws(SystemCallError) {
        let resolved = source == .auto ? UdevSource.resolvedAuto() : source
        let (handle, raised) = try MonitorHandle.receiving(
            source: resolved, subsystems: subsystems, receiveBufferBytes: receiveBufferBytes)
        self.receiveBufferRaised = raised
        self.receiveBufferBytes = receiveBufferBytes
        self.handle = Locked(handle)
    }

    /// Listens to `source` (`udev` or `kernel`; `auto` resolves now) from now on, with the same subsystems and
    /// receive buffer. The monitor gets a new socket: ``fileDescriptor`` changes and the old socket is closed, so
    /// stop watching it first; events still queued on it are lost (re-read the devices after a switch).
    public func switchSource(to source: UdevSource) throws(SystemCallError) {
        let resolved = source == .auto ? UdevSource.resolvedAuto() : source
        let outcome: Result<MonitorHandle, SystemCallError> = handle.withLock { handle in
            guard handle.source != resolved else { return .success(handle) }
            let opened = Result { () throws(SystemCallError) in
                try MonitorHandle.receiving(
                    source: resolved, subsystems: handle.subsystems, receiveBufferBytes: receiveBufferBytes
                ).handle
            }
            guard case .success(let new) = opened else { return opened }
            let old = handle
            handle = new
            return .success(old)
        }
        // The old handle (and its socket) goes here, outside the lock.
        _ = try outcome.get()
    }

    /// Listens to `subsystems` from now on (all when empty); events of others already queued may still arrive.
    public func filter(subsystems: [String]) throws(SystemCallError) {
        let outcome: Result<Void, SystemCallError> = handle.withLock { handle in
            guard handle.subsystems != subsystems else { return .success(()) }
            return Result { () throws(SystemCallError) in try handle.filter(subsystems: subsystems, install: true) }
        }
        try outcome.get()
    }

    /// Sets the socket's receive buffer (for tests that provoke an overflow with a small one).
    public func setReceiveBuffer(bytes: Int32) throws(SystemCallError) {
        let result = handle.withLock { udev_monitor_set_receive_buffer_size($0.monitor, bytes) }
        guard result >= 0 else {
            throw SystemCallError("udev", operation: "udev_monitor_set_receive_buffer_size", errno: -result)
        }
    }

    /// Reads the events pending now, at most `maximum` of them (and the overflows met), without blocking.
    public func readAvailable(upTo maximum: Int = .max) throws(SystemCallError) -> UdevBatch {
        var devices: [UdevDevice] = []
        let read = try readAvailable(upTo: maximum, appendingTo: &devices)
        return UdevBatch(devices: devices, read: read)
    }

    /// Reads the events pending now, at most `maximum` of them (and the overflows met), without blocking, and
    /// appends their devices to `devices`: an array the caller keeps from read to read grows once, not at every
    /// read. On a thrown error the devices appended so far stay in `devices`.
    public func readAvailable(
        upTo maximum: Int = .max, appendingTo devices: inout [UdevDevice]
    ) throws(SystemCallError) -> UdevRead {
        let outcome: Result<UdevRead, SystemCallError> = handle.withLock { handle in
            var read = UdevRead()
            var count = 0
            while count < maximum {
                errno = 0
                guard let device = udev_monitor_receive_device(handle.monitor) else {
                    switch errno {
                    case 0, EAGAIN, EWOULDBLOCK:
                        read.drained = true
                        return .success(read)
                    case ENOBUFS:
                        read.overflowed = true
                    case EINTR:
                        continue
                    default:
                        return .failure(SystemCallError("udev", operation: "udev_monitor_receive_device", errno: errno))
                    }
                    continue
                }
                devices.append(UdevDevice(copying: device, received: true))
                udev_device_unref(device)
                count += 1
            }
            return .success(read)
        }
        return try outcome.get()
    }
}

/// What one read of a ``UdevMonitor`` met besides the devices it appended.
public struct UdevRead: Sendable, Equatable {
    /// `true` when events were lost because the receive buffer was full (ENOBUFS): the caller must re-enumerate.
    public var overflowed = false
    /// `true` when the monitor had nothing more to read; `false` when the read stopped at its limit.
    public var drained = false

    /// A read that met nothing yet.
    public init() {}
}

/// The libudev context and monitor, released together. Only used under the monitor's lock.
final class MonitorHandle {
    let context: OpaquePointer
    let monitor: OpaquePointer
    let source: UdevSource
    private(set) var subsystems: [String] = []

    /// A monitor of `source` for `subsystems`, receiving; `raised` tells whether the receive buffer is
    /// `receiveBufferBytes`.
    static func receiving(
        source: UdevSource, subsystems: [String], receiveBufferBytes: Int32
    ) throws(SystemCallError)
        -> (handle: MonitorHandle, raised: Bool)
    {
        let handle = try MonitorHandle(source: source)
        try handle.filter(subsystems: subsystems, install: false)
        // Raising the buffer past rmem_max needs CAP_NET_ADMIN; without it the monitor works with the default
        // buffer (and reports overflows, as always), so this is not a reason to fail.
        let raised = udev_monitor_set_receive_buffer_size(handle.monitor, receiveBufferBytes) >= 0
        let enabled = udev_monitor_enable_receiving(handle.monitor)
        guard enabled >= 0 else {
            throw SystemCallError("udev", operation: "udev_monitor_enable_receiving", errno: -enabled)
        }
        return (handle, raised)
    }

    /// Matches `subsystems` only; `install` applies the new filter to a monitor that is already receiving.
    func filter(subsystems: [String], install: Bool) throws(SystemCallError) {
        udev_monitor_filter_remove(monitor)
        for subsystem in subsystems {
            let result = udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil)
            guard result >= 0 else {
                throw SystemCallError(
                    "udev", operation: "udev_monitor_filter_add_match_subsystem_devtype(\(subsystem))", errno: -result)
            }
        }
        if install {
            let result = udev_monitor_filter_update(monitor)
            guard result >= 0 else {
                throw SystemCallError("udev", operation: "udev_monitor_filter_update", errno: -result)
            }
        }
        self.subsystems = subsystems
    }

    init(source: UdevSource) throws(SystemCallError) {
        guard let context = udev_new() else { throw SystemCallError("udev", operation: "udev_new", errno: errno) }
        guard let monitor = udev_monitor_new_from_netlink(context, source.rawValue) else {
            let code = errno
            udev_unref(context)
            throw SystemCallError("udev", operation: "udev_monitor_new_from_netlink(\(source.rawValue))", errno: code)
        }
        self.context = context
        self.monitor = monitor
        self.source = source
    }

    deinit {
        udev_monitor_unref(monitor)
        udev_unref(context)
    }
}
