// Linux interfaces that Swift's Glibc module does not export:
// - pidfd_open(2) (glibc 2.36, Linux 5.3): a descriptor that becomes readable when a process exits, so a hook's
//   exit is an event and never polled for;
// - epoll(7), which hooks' pipes and pidfds are watched with (one Dispatch source for all of them);
// - mallopt(3) and malloc_trim(3), with which netdevd keeps one malloc arena and returns a burst's memory;
// - pipe2(2), which glibc declares only under _GNU_SOURCE: a pipe that is close-on-exec from creation, so a
//   process spawned by another thread at that moment cannot inherit it.
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>

extern int pipe2(int pipefd[2], int flags);
