// Binary byte units as doubles, for the figures reports print (GiB/s, MiB): one definition instead of one per file.
#pragma once

namespace feedrate {

inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

}  // namespace feedrate
