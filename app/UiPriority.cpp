#include "UiPriority.h"

#include <QtGlobal>

#if defined(Q_OS_LINUX)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

int yieldUiThreadToInference() {
    // On Linux a nice value belongs to a thread: PRIO_PROCESS with a thread id sets that thread's
    // alone (the worker and the driver's threads, started earlier, keep theirs).
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, tid);
    if (errno != 0) return 0;
    if (now < kUiNice) setpriority(PRIO_PROCESS, tid, std::min(19, kUiNice));
    errno = 0;
    const int after = getpriority(PRIO_PROCESS, tid);
    return errno == 0 ? after : now;
}
#else
int yieldUiThreadToInference() {
    return 0;
}
#endif
