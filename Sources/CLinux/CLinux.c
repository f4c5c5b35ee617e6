// CLinux has no code of its own: it exports declarations of the C library (include/CLinux.h).
#include "CLinux.h"
