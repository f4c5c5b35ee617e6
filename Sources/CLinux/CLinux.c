// CLinux exports declarations of the C library (include/CLinux.h), and the one thing netdevd must do in C: start a
// hook process (netdevd_spawn), whose child runs on borrowed memory where Swift cannot run.
#define _GNU_SOURCE
#include "CLinux.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NETDEVD_SPAWN_THROUGH_POSIX_SPAWN 1
#endif
#endif

#ifdef NETDEVD_SPAWN_THROUGH_POSIX_SPAWN
// ThreadSanitizer intercepts clone() as a fork and fails a check when the child shares the parent's memory
// (CLONE_VM). Its builds (`make test-tsan`) start hooks through posix_spawn with the same set-up instead; the pidfd
// is then the caller's pidfd_open.
#include <spawn.h>

int netdevd_spawn(
    const char *path, char *const argv[], char *const envp[], int input, int output,
    const struct netdevd_credentials *credentials, pid_t *pid, int *pidfd) {
    // posix_spawn cannot change the user; these builds run hooks as the caller's user only.
    if (credentials != NULL) return ENOTSUP;
    // Above the standard three, so that opening /dev/null as 0 cannot replace it first.
    int moved = output > 2 ? output : fcntl(output, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) return errno;
    int movedInput = input < 0 || input > 2 ? input : fcntl(input, F_DUPFD_CLOEXEC, 3);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (movedInput >= 0) {
        posix_spawn_file_actions_adddup2(&actions, movedInput, 0);
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&actions, moved, 1);
    posix_spawn_file_actions_adddup2(&actions, moved, 2);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    *pidfd = -1;
    int failure = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (moved != output) close(moved);
    if (movedInput != input) close(movedInput);
    return failure;
}
#else
/// What the child needs, in the parent's memory (the child shares it until it execs).
struct spawn_request {
    const char *path;
    char *const *argv;
    char *const *envp;
    int input;
    int output;
    const struct netdevd_credentials *credentials;
    /// Set by the child when it cannot exec: the parent reads it once the child has exec-ed or exited.
    volatile int error;
};

/// Moves `descriptor` to 3 or above (without close-on-exec) when it is one of the standard three, so that setting
/// up 0, 1 and 2 cannot close it first.
static int above_standard(int descriptor) {
    return descriptor > 2 ? descriptor : fcntl(descriptor, F_DUPFD, 3);
}

/// The child, from clone() to execve(). It shares netdevd's memory and runs with every signal blocked but SIGCHLD
/// at its default (the mask is inherited from the parent; it has no child to send it one), so it calls only system
/// call wrappers: no malloc, no locks, no Swift.
static int spawn_child(void *opaque) {
    struct spawn_request *request = opaque;
    // A handler of netdevd's must not run here, on memory netdevd uses: every caught signal goes back to its
    // default before anything is unblocked. The ones netdevd ignores or handles that a hook expects at their
    // default (SIGPIPE, and the stop and reload signals) are reset too; an ignored signal would stay ignored
    // across exec.
    for (int number = 1; number < _NSIG; number++) {
        struct sigaction action;
        if (sigaction(number, NULL, &action) != 0) continue;  // glibc's own (32, 33), or out of range
        int standard = number == SIGTERM || number == SIGINT || number == SIGHUP || number == SIGPIPE;
        if (standard || (action.sa_handler != SIG_IGN && action.sa_handler != SIG_DFL)) {
            memset(&action, 0, sizeof action);
            action.sa_handler = SIG_DFL;
            sigaction(number, &action, NULL);
        }
    }
    // Its own process group, so that netdevd can signal whatever the hook leaves behind.
    if (setpgid(0, 0) != 0) goto failed;
    int output = above_standard(request->output);
    int input = request->input >= 0 ? request->input : open("/dev/null", O_RDONLY);
    if (output < 0 || input < 0) goto failed;
    input = above_standard(input);
    if (input < 0 || dup2(input, 0) < 0 || dup2(output, 1) < 0 || dup2(output, 2) < 0) goto failed;
    // Nothing else reaches the hook, not even descriptors netdevd inherited without close-on-exec.
    // Without close_range (before Linux 5.9, or refused by a seccomp filter), every number up to the limit is
    // closed, at most 65,536 of them: the calling thread waits for this child's exec.
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) {
        long last = sysconf(_SC_OPEN_MAX);
        if (last <= 0 || last > 65536) last = 65536;
        for (long descriptor = 3; descriptor < last; descriptor++) close((int)descriptor);
    }
    // The user and groups the hook runs as. The system calls themselves: glibc's setuid() and its kin make every
    // thread of the process change too, by signalling them through lists in the memory this child borrows.
    const struct netdevd_credentials *credentials = request->credentials;
    if (credentials != NULL) {
        if (syscall(SYS_setgroups, credentials->group_count, credentials->groups) != 0) goto failed;
        if (syscall(SYS_setresgid, credentials->gid, credentials->gid, credentials->gid) != 0) goto failed;
        if (syscall(SYS_setresuid, credentials->uid, credentials->uid, credentials->uid) != 0) goto failed;
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(request->path, request->argv, request->envp);
failed:
    request->error = errno;
    _exit(127);
}

int netdevd_spawn(
    const char *path, char *const argv[], char *const envp[], int input, int output,
    const struct netdevd_credentials *credentials, pid_t *pid, int *pidfd) {
    // One child stack, reused: the parent is suspended until its child has exec-ed (CLONE_VFORK), so one at a time
    // is all it takes, and a spawn costs no mmap/munmap (an munmap in a threaded process shoots down every CPU's TLB).
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char stack[64 * 1024] __attribute__((aligned(64)));
    struct spawn_request request = {path, argv, envp, input, output, credentials, 0};
    int saved = errno;
    sigset_t all, previous;
    sigfillset(&all);
    // Except SIGCHLD while it has no handler (netdevd installs none): a hook exiting while this thread had it
    // blocked made the signal pending instead of discarded, and every signal made pending wakes each signalfd of
    // the process (libdispatch's manager thread sleeps on three): thousands of wake-ups in a burst. Unblocked, and
    // at its default, it is discarded as it is sent, and no handler can run in the child.
    pthread_mutex_lock(&lock);
    struct sigaction child_action;
    if (sigaction(SIGCHLD, NULL, &child_action) == 0 && child_action.sa_handler == SIG_DFL) sigdelset(&all, SIGCHLD);
    // The system call itself, not pthread_sigmask: glibc's wrapper leaves its own two signals (32, 33) unblocked.
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &previous, _NSIG / 8);
    *pidfd = -1;
    // CLONE_PIDFD: the exit is watched through a pidfd made with the process, one system call fewer than
    // pidfd_open. A kernel before 5.2 ignores the flag (the pidfd stays -1); a seccomp filter may refuse it (EPERM,
    // ENOSYS, EINVAL), and then the process is made without one. Either way the caller opens one itself or polls.
    pid_t child = clone(spawn_child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &request,
                        pidfd);
    if (child < 0) {
        *pidfd = -1;
        child = clone(spawn_child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &request);
    }
    int failure = child < 0 ? errno : request.error;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, NULL, _NSIG / 8);
    pthread_mutex_unlock(&lock);
    if (child >= 0 && failure != 0) {
        // The child could not exec and has exited: reap it, so no zombie is left.
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        if (*pidfd >= 0) close(*pidfd);
        *pidfd = -1;
    }
    errno = saved;  // the child wrote errno in this thread's memory
    if (failure != 0) return failure;
    *pid = child;
    return 0;
}
#endif

ssize_t netdevd_send_with_descriptor(int socket, const void *bytes, size_t length, int descriptor, int flags) {
    struct iovec vector = {(void *)bytes, length};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    if (descriptor >= 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.buffer;
        message.msg_controllen = sizeof control.buffer;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    }
    return sendmsg(socket, &message, flags);
}

ssize_t netdevd_receive_with_descriptor(int socket, void *bytes, size_t length, int flags, int *descriptor) {
    struct iovec vector = {bytes, length};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    *descriptor = -1;
    ssize_t received = recvmsg(socket, &message, flags | MSG_CMSG_CLOEXEC);
    if (received < 0) return received;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t index = 0; index < count; index++) {
            int passed;
            memcpy(&passed, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
            // One descriptor is expected; any other is closed, never left open.
            if (*descriptor < 0) *descriptor = passed; else close(passed);
        }
    }
    return received;
}

int netdevd_memfd(const char *name) {
    return memfd_create(name, MFD_CLOEXEC);
}
