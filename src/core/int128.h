// 128-bit integers, named once. Exact arithmetic on quantities, time integrals and money needs
// them; they are a GCC/Clang extension, declared here with __extension__ so the rest of the code
// builds with -Wpedantic.
#pragma once

namespace arbiter {

__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;

}  // namespace arbiter
