// fcov: which functions of a program run, in the order they first run.
//
//   fcov FUNCTIONS PROGRAM [ARG...]
//
// FUNCTIONS has one function a line, "ADDRESS NAME", ADDRESS in hex as `nm` prints it, lines sorted by
// address with no address twice (generate.sh writes it). fcov starts PROGRAM under ptrace, puts an int3
// on the first byte of every function, and when one fires, puts the byte back and lets the thread go on:
// each breakpoint costs one stop, the first time only. When PROGRAM exits, fcov prints the names of the
// functions that ran on standard output, one a line, in first-run order, and exits with PROGRAM's status
// (128+N if signal N killed it). PROGRAM's own standard output goes to fcov's standard error.
//
// What is traced: PROGRAM's threads (PTRACE_O_TRACECLONE), which share its memory and breakpoints, and
// the children it starts with vfork or clone(CLONE_VFORK) (PTRACE_O_TRACEVFORK) until they exec: netdevd's
// hooks start through netdevd_spawn, whose child shares netdevd's memory and runs its code up to the exec,
// so an untraced child would die of the first int3 it met (SIGTRAP). Their hits count like any thread's,
// and they are let go at their exec. Not traced: processes forked without shared memory; they start with a
// copy of the breakpoints, harmless as long as they run none of PROGRAM's code before exec. Signals are
// passed on, so SIGTERM stops PROGRAM the usual way and fcov then reports; SIGSTOP is the exception (new
// threads and children start with one).
//
// x86-64 Linux only (int3, rip). Build: cc -O2 -o fcov fcov.c
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long *address;  // link-time addresses, ascending
static char **name;
static unsigned char *original;  // the byte each int3 replaced
static int *runOrder;            // indices into address[], in first-run order
static char *ran;
static int count, ranCount;

static void fail(const char *what) {
    perror(what);
    exit(99);
}

static void readFunctions(const char *path) {
    FILE *file = fopen(path, "r");
    if (!file) fail(path);
    int capacity = 0;
    char symbol[4096];
    unsigned long value;
    while (fscanf(file, "%lx %4095s", &value, symbol) == 2) {
        if (count == capacity) {
            capacity = capacity ? 2 * capacity : 4096;
            address = realloc(address, capacity * sizeof *address);
            name = realloc(name, capacity * sizeof *name);
            if (!address || !name) fail("realloc");
        }
        if (count > 0 && value <= address[count - 1]) {
            fprintf(stderr, "fcov: %s: addresses must be ascending and unique (%s)\n", path, symbol);
            exit(99);
        }
        address[count] = value;
        name[count++] = strdup(symbol);
    }
    fclose(file);
    original = malloc(count);
    runOrder = malloc(count * sizeof *runOrder);
    ran = calloc(count, 1);
    if (count == 0 || !original || !runOrder || !ran) {
        fprintf(stderr, "fcov: %s: no functions\n", path);
        exit(99);
    }
}

static int indexOf(unsigned long value) {
    int low = 0, high = count - 1;
    while (low <= high) {
        int middle = low + (high - low) / 2;
        if (address[middle] == value) return middle;
        if (address[middle] < value) low = middle + 1; else high = middle - 1;
    }
    return -1;
}

// Where the program was loaded: the entry point the kernel gave it (AT_ENTRY in its auxiliary vector)
// minus the entry point its ELF header names. Zero for a non-PIE executable.
static unsigned long loadBias(pid_t pid) {
    char path[64];
    Elf64_Ehdr header;
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || pread(fd, &header, sizeof header, 0) != sizeof header) fail(path);
    close(fd);
    snprintf(path, sizeof path, "/proc/%d/auxv", pid);
    fd = open(path, O_RDONLY);
    if (fd < 0) fail(path);
    Elf64_auxv_t entry;
    while (read(fd, &entry, sizeof entry) == sizeof entry && entry.a_type != AT_NULL) {
        if (entry.a_type == AT_ENTRY) {
            close(fd);
            return entry.a_un.a_val - header.e_entry;
        }
    }
    fprintf(stderr, "fcov: no AT_ENTRY in %s\n", path);
    exit(99);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fcov FUNCTIONS PROGRAM [ARG...]\n");
        return 2;
    }
    readFunctions(argv[1]);

    pid_t pid = fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
        // Standard output is for the result; the program's output goes with the diagnostics.
        dup2(2, 1);
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        execv(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    // The program stops with SIGTRAP right after execv, before any of its code ran.
    if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
        fprintf(stderr, "fcov: %s did not start\n", argv[2]);
        return 99;
    }

    // Text is read-only to the program, but a tracer may write it through /proc/PID/mem.
    unsigned long bias = loadBias(pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int memory = open(path, O_RDWR);
    if (memory < 0) fail(path);
    const unsigned char int3 = 0xcc;
    for (int i = 0; i < count; i++) {
        if (pread(memory, &original[i], 1, bias + address[i]) != 1) fail("reading the program's text");
        if (pwrite(memory, &int3, 1, bias + address[i]) != 1) fail("writing a breakpoint");
    }
    // EXITKILL: if fcov dies, the program must not run on with int3s in its text.
    ptrace(PTRACE_SETOPTIONS, pid, 0,
        PTRACE_O_TRACECLONE | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
    ptrace(PTRACE_CONT, pid, 0, 0);

    int exitStatus = 99;
    for (;;) {
        pid_t thread = waitpid(-1, &status, __WALL);
        if (thread < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            if (thread != pid) continue;  // one thread ended; the program goes on
            exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        int signal = WSTOPSIG(status);
        if (status >> 16 == PTRACE_EVENT_EXEC && thread != pid) {
            // A vforked child became another program, with memory of its own and no breakpoints.
            ptrace(PTRACE_DETACH, thread, 0, 0);
            continue;
        }
        if (status >> 16 != 0 || signal == SIGSTOP) {
            // A clone or vfork event, or a new thread's or child's first stop: nothing to deliver.
            ptrace(PTRACE_CONT, thread, 0, 0);
            continue;
        }
        if (signal == SIGTRAP) {
            struct user_regs_struct registers;
            ptrace(PTRACE_GETREGS, thread, 0, &registers);
            int i = indexOf(registers.rip - 1 - bias);
            if (i >= 0) {
                // Another thread may have hit the same int3 before the byte came back: restore and
                // rewind all the same, count it once.
                if (!ran[i]) {
                    ran[i] = 1;
                    runOrder[ranCount++] = i;
                }
                if (pwrite(memory, &original[i], 1, bias + address[i]) != 1) fail("restoring a function");
                registers.rip--;
                ptrace(PTRACE_SETREGS, thread, 0, &registers);
                ptrace(PTRACE_CONT, thread, 0, 0);
                continue;
            }
        }
        ptrace(PTRACE_CONT, thread, 0, signal);
    }

    for (int i = 0; i < ranCount; i++) printf("%s\n", name[runOrder[i]]);
    fprintf(stderr, "fcov: %d of %d functions ran; %s exited with status %d\n", ranCount, count, argv[2],
        exitStatus);
    return exitStatus;
}
