/* Process-wide settings (luahier_process.h). Why the malloc one: a stream of request lines
 * allocates and frees the same few megabytes over and over (a collection cycle frees a
 * state's tables at once; the batches go from one thread to another). With glibc's defaults
 * (trim at 128 KiB of free memory at a heap's top), each cycle's memory went back to the
 * kernel (madvise) and the next lines faulted the pages in again: 20,000 page faults for
 * 200,000 lines of `dispatch`, about a tenth of its time (docs/performance.md). */
#include "luahier_process.h"

#include <stdlib.h> /* defines __GLIBC__ where the C library is glibc */
#if defined(__GLIBC__)
#include <malloc.h>
#endif

int luahier_process_keepfreedmemory(void) {
#if defined(__GLIBC__)
    int trim = mallopt(M_TRIM_THRESHOLD, 4 << 20);
    int pad = mallopt(M_TOP_PAD, 1 << 20);
    return trim == 1 && pad == 1;
#else
    return 0;
#endif
}
