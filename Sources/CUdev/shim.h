// libudev: device enumeration and the uevent monitor.
#include <libudev.h>
