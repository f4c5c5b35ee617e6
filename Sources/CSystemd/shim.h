// libsystemd: the journal (writing entries, reading them back), service notifications, socket activation and the
// watchdog. Only the Systemd module imports this; its C types never leave it.
// sd_journal_send* without the CODE_FILE/CODE_LINE macros (which Swift cannot call anyway).
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
