// Segmentation label masks: one class id per pixel, read from the PNGs datasets ship (8-bit gray
// ids, palette PNGs as VOC stores them, RGB colours through a palette), never interpolated.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cvtrain {

using Colour = std::array<uint8_t, 3>;

// A class id per pixel, row by row; `ignore_index` where nothing is labelled.
struct LabelMask {
  std::vector<uint8_t> ids;
  int width = 0;
  int height = 0;
};

// How a dataset's mask files hold their ids.
struct MaskCoding {
  int64_t num_classes = 0;         // ids from 0 to num_classes - 1 (or ignore_index); 0: not checked
  int ignore_index = 255;          // pixels that count for no class (VOC's object borders, padding)
  bool reduce_zero_label = false;  // ADE20K: 0 is "other" (ignored) and every class id is one less than stored
  std::vector<Colour> palette;     // class i's colour. Palette PNGs are read by colour when it is set (their
                                   // index ignore_index is always ignored), by index when it is not; RGB masks need it
};

// Decodes a mask file (PNG: 8- or 16-bit gray, palette, RGB or RGBA with alpha dropped) into ids,
// applies reduce_zero_label and checks every id. Errors name `name` and what is wrong with it: a
// colour not in the palette, an id at or beyond num_classes (with a pixel where it is), a file that
// is no PNG.
LabelMask decode_mask(const std::vector<uint8_t>& bytes, const std::string& name, const MaskCoding& coding);

// The colour map of Pascal VOC (and mmseg's and the DeepLab code's `create_pascal_label_colormap`):
// the bits of each id spread over red, green and blue from the high bit down.
std::vector<Colour> voc_palette(int colours = 256);

// Pixels per id (256 counters, ignore_index's among them).
std::array<uint64_t, 256> id_counts(const LabelMask& mask);

}  // namespace cvtrain
