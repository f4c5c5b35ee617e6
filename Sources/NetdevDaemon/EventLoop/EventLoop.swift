// EventLoop: where the loop runs. The `Poller` serves the main thread's epoll set and runs the main queue between
// readinesses, so a kernel message reaches the session with no thread woken; `PollerTimer` and `Timers` are its
// timers (timerfds, no libdispatch timer wake-ups); `MemoryTrim` gives a burst's memory back once it is over.
