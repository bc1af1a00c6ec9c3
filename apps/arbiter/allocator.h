// The allocator serving malloc in `arbiter` (issue 27; docs/serve.md, "The allocator"): the build
// links jemalloc unless configured with -DARBITER_ALLOCATOR=system (or for the sanitizers), and
// `arbiter --version` names what is actually in use, so a build that lost it shows.
#pragma once

#include <string>

namespace arbiter::app {

// "jemalloc VERSION" when the binary was linked with jemalloc and malloc goes to it; "system
// malloc" when it was built without; "another malloc (jemalloc linked but not serving malloc)"
// when a malloc did not go through the linked jemalloc (another allocator preloaded, say).
std::string AllocatorInUse();

}  // namespace arbiter::app
