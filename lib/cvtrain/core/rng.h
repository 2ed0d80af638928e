// Counter-based randomness: every random decision is a pure function of (seed, epoch, index), so
// data order and augmentation never depend on thread timing or world size.
#pragma once

#include <cstdint>

namespace cvtrain {

// SplitMix64's finaliser: a strong 64-bit mix, easy to reproduce in any language.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The key of one sample's randomness in one epoch.
constexpr uint64_t sample_key(uint64_t seed, uint64_t epoch, uint64_t index) {
  return mix64(mix64(mix64(seed) ^ epoch) ^ index);
}

// SplitMix64 stream: next() returns mix64 of a counter advanced by the golden-ratio increment.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t out = mix64(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return out;
  }
  // Uniform integer in [0, n): the high half of a 64x64-bit product (Lemire), no division.
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  // Uniform double in [0, 1) from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

 private:
  uint64_t state_;
};

}  // namespace cvtrain
