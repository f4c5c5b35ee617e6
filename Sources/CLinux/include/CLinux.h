// Linux interfaces that Swift's Glibc module does not export:
// - pidfd_open(2) (glibc 2.36, Linux 5.3): a descriptor that becomes readable when a process exits, so a hook's
//   exit is an event and never polled for;
// - epoll(7) and timerfd(2): netdevd's own poller thread, which watches the monitors, the hooks' pipes and pidfds,
//   and the deadlines (see Poller.swift);
// - mallopt(3) and malloc_trim(3), with which netdevd keeps one malloc arena and returns a burst's memory;
// - pipe2(2), which glibc declares only under _GNU_SOURCE: a pipe that is close-on-exec from creation, so a
//   process spawned by another thread at that moment cannot inherit it;
// - posix_spawn_file_actions_addclosefrom_np(3) (glibc 2.34), also _GNU_SOURCE only: a hook gets its standard
//   descriptors and nothing netdevd inherited without close-on-exec;
// - accept4(2), _GNU_SOURCE only as well: a control connection that is close-on-exec and non-blocking from
//   creation;
// - memfd_create(2), _GNU_SOURCE only too: a journal entry too large for a datagram goes to journald in a sealed memfd;
// - mkostemp(3), _GNU_SOURCE only as well: the metrics file's temporary name, new and close-on-exec from creation.
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/timerfd.h>
#include <spawn.h>

#include <sys/socket.h>

extern int pipe2(int pipefd[2], int flags);
extern int memfd_create(const char *name, unsigned int flags);
extern int mkostemp(char *template, int flags);

// libdispatch's main queue, served by a thread's own event loop as CoreFoundation's run loop serves it on Linux:
// the eventfd that becomes readable when the main queue has work, and the call that runs that work (on the main
// thread). netdevd's main thread runs its poller and its event loop this way (see Poller.swift).
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
