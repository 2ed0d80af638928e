// A 64-bit perceptual hash of an image (pHash, the method of Python's imagehash.phash): equal or a
// few bits apart for the same picture re-encoded, resized or slightly recoloured, so `data inspect`
// finds copies that no longer hold the same bytes.
#pragma once

#include <cstdint>
#include <optional>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

// The image in gray, averaged down to 32 x 32, its 2-D DCT's lowest 8 x 8 frequencies, each bit
// set where a coefficient is above their median. nullopt for an image with no detail at those
// frequencies (a blank or flat one), whose bits would be noise and match other blank images.
std::optional<uint64_t> perceptual_hash(const Image& image);

// How many of the 64 bits differ.
int hash_distance(uint64_t a, uint64_t b);

// Hashes at most this far apart may be one picture (copies re-encoded or resized are within 2 in
// practice, unrelated photographs about 32 apart). Pictures of one layout (centred objects on a
// plain ground: Fashion-MNIST's shoes) also come this close, so picture_correlation decides.
inline constexpr int kLookAlikeBits = 3;

// The Pearson correlation of the two pictures' gray levels averaged down to 32 x 32 (as
// perceptual_hash sees them): 1 for one picture at any size or brightness, 0 for unrelated ones;
// 0 too when either is flat.
double picture_correlation(const Image& a, const Image& b);

// Copies re-encoded (JPEG quality 40) or resized down to 60 px correlate above 0.999; a 20 x 15
// thumbnail about 0.99. Different Fashion-MNIST garments of one outline reach 0.98; at 0.99 what
// remains is one product photographed twice (in two colours, say).
inline constexpr double kSamePictureCorrelation = 0.99;

}  // namespace cvtrain
