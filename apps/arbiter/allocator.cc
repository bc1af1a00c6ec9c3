#include "allocator.h"

#include <cstdint>
#include <cstdlib>
#include <string>

#ifdef ARBITER_WITH_JEMALLOC
// Debian's jemalloc exports its API without a prefix (jemalloc/jemalloc.h would redeclare malloc).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);

// jemalloc's options, read when it starts (MALLOC_CONF in the environment still applies after):
// blocks of 1 MiB and more (a list's answer, a watch's first one) are served from its oversize
// arena, whose freed pages go back at once, as UseServeHeapPolicy (http_server.h) does for glibc.
// With the default threshold, 8 MiB, a Table of 10k pods (a 3-5 MB answer) was left in the
// arena of each worker that built one: RSS 87 -> 141-150 MB over 20 lists, against 82 -> 85 MB
// (BM_ServeListMemory/10000/1).
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "oversize_threshold:1048576";
}
#endif

namespace arbiter::app {

std::string AllocatorInUse() {
#ifdef ARBITER_WITH_JEMALLOC
  const char* version = nullptr;
  size_t len = sizeof version;
  if (mallctl("version", &version, &len, nullptr, 0) != 0 || version == nullptr)
    return "another malloc (jemalloc linked but not answering)";
  // jemalloc's count of the bytes this thread allocated grows only if malloc is jemalloc's.
  uint64_t before = 0, after = 0;
  size_t n = sizeof before;
  constexpr size_t kProbe = 64 * 1024;
  const int rc = mallctl("thread.allocated", &before, &n, nullptr, 0);
  void* volatile probe = std::malloc(kProbe);  // volatile: the pair is not elided
  const int rc2 = mallctl("thread.allocated", &after, &n, nullptr, 0);
  std::free(probe);
  size_t oversize = 0;
  n = sizeof oversize;
  const std::string threshold = mallctl("opt.oversize_threshold", &oversize, &n, nullptr, 0) == 0
                                    ? ", oversize_threshold " + std::to_string(oversize)
                                    : "";
  if (rc == 0 && rc2 == 0 && after - before >= kProbe)
    return std::string("jemalloc ") + version + threshold;
  return "another malloc (jemalloc linked but not serving malloc)";
#else
  return "system malloc";
#endif
}

}  // namespace arbiter::app
