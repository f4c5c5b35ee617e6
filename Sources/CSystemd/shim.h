// libsystemd's sd-daemon (notify, watchdog, socket activation) and sd-journal (native journal protocol).
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
