// `arbiter --version` and the daemon's /version: the project version, plus `git describe --always
// --tags --dirty` when built from a git checkout, as of the build (cmake/version.cmake writes the
// definition at every build, so a binary names the commit it was built from).
#pragma once

namespace arbiter::app {
extern const char* const kVersion;
}  // namespace arbiter::app
