// Linux interfaces that Swift's Glibc module does not export:
// - pidfd_open(2) (glibc 2.36, Linux 5.3): a descriptor that becomes readable when a process exits, so a hook's
//   exit is an event and never polled for;
// - epoll(7) and timerfd(2): netdevd's own poller thread, which watches the monitors, the hooks' pipes and pidfds,
//   and the deadlines (see Poller.swift);
// - mallopt(3) and malloc_trim(3), with which netdevd keeps one malloc arena and returns a burst's memory;
// - pipe2(2), which glibc declares only under _GNU_SOURCE: a pipe that is close-on-exec from creation, so a
//   process spawned by another thread at that moment cannot inherit it;
// - accept4(2), _GNU_SOURCE only as well: a control connection that is close-on-exec and non-blocking from
//   creation;
// - mkostemp(3), _GNU_SOURCE only too: the metrics file's temporary name, new and close-on-exec from creation.
//
// And one function of its own, netdevd_spawn (CLinux.c), which starts hooks.
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/timerfd.h>
#include <stddef.h>
#include <sys/types.h>

#include <sys/socket.h>

extern int pipe2(int pipefd[2], int flags);
extern int mkostemp(char *template, int flags);

// libdispatch's main queue, served by a thread's own event loop as CoreFoundation's run loop serves it on Linux:
// the eventfd that becomes readable when the main queue has work, and the call that runs that work (on the main
// thread). netdevd's main thread runs its poller and its event loop this way (see Poller.swift).
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

#include <pthread.h>

// Names a thread (at most 15 bytes) as `top -H` and /proc/PID/task/TID/comm show it.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// The user and groups a process is started as.
struct netdevd_credentials {
    uid_t uid;
    gid_t gid;
    size_t group_count;
    const gid_t *groups;
};

/// Starts `path` with `argv` and `envp` as a hook: in a process group of its own, standard input from `input`
/// (/dev/null when it is -1), standard output and error to `output`, no other descriptor, no signal blocked, and
/// SIGTERM, SIGINT, SIGHUP, SIGPIPE and every signal netdevd catches at their defaults; as `credentials`' user and
/// groups when it is not NULL (which needs CAP_SETUID and CAP_SETGID). Sets `*pid`, and `*pidfd` to a
/// close-on-exec pidfd of the child (-1 where the kernel makes none). Returns 0 or the errno of what failed (the
/// exec's included: no process is left then). Like posix_spawn it uses vfork semantics (the calling thread waits
/// for the exec), but with a stack it reuses and the pidfd made by clone itself. (ThreadSanitizer builds use
/// posix_spawn: its clone interceptor cannot follow a child that shares memory; they return ENOTSUP for
/// credentials.)
int netdevd_spawn(
    const char *path, char *const argv[], char *const envp[], int input, int output,
    const struct netdevd_credentials *credentials, pid_t *pid, int *pidfd);

/// Sends `length` bytes on `socket` (sendmsg with `flags`), with `descriptor` passed along (SCM_RIGHTS) unless it
/// is -1. Returns what sendmsg returns.
ssize_t netdevd_send_with_descriptor(int socket, const void *bytes, size_t length, int descriptor, int flags);

/// Receives one message into `bytes` (recvmsg with `flags`), and the descriptor passed with it into
/// `*descriptor` (close-on-exec; -1 when none; any further one is closed). Returns what recvmsg returns.
ssize_t netdevd_receive_with_descriptor(int socket, void *bytes, size_t length, int flags, int *descriptor);

/// A close-on-exec memfd (memfd_create(2)), or -1 with errno set.
int netdevd_memfd(const char *name);
