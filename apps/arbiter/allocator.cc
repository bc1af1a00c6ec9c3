#include "allocator.h"

#include <cstdint>
#include <cstdlib>

#ifdef ARBITER_WITH_JEMALLOC
// Debian's jemalloc exports its API without a prefix (jemalloc/jemalloc.h would redeclare malloc).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);
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
  if (rc == 0 && rc2 == 0 && after - before >= kProbe) return std::string("jemalloc ") + version;
  return "another malloc (jemalloc linked but not serving malloc)";
#else
  return "system malloc";
#endif
}

}  // namespace arbiter::app
