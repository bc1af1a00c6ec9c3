// The simulator lives here (virtual clock, trace readers, reports).
namespace arbiter::sim {}
