// What the CPU running this process can do, for kernels compiled for more than the x86-64 baseline
// and chosen at run time (the build itself targets the baseline, so one binary runs everywhere).
#pragma once

namespace cvtrain {

// AVX2: 256-bit integer vectors (Haswell, Zen and later).
inline bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

}  // namespace cvtrain
