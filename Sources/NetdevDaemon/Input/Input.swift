// Input: everything the session hears, as its events. The kernel monitors opened at start (`KernelMonitors`), the
// udev and rtnetlink sources read on the loop's queue (`DeviceEventSource`, `ReadableEventSource`), signals and the
// watchdog tick, networkd's state files (`NetworkdStateWatcher`), the inotify reads every watch shares (`Inotify`), and
// `KernelValues`, the one place the adapters' values (Netlink, Udev) become the session's.
