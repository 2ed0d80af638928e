// Mask files read through libpng without its colour transforms: a palette PNG's indices are kept,
// 16-bit ids are not cut to their high byte.
#include "cvtrain/data/label_mask.h"

#include <fmt/format.h>
#include <png.h>

#include <unordered_map>

#include "cvtrain/core/error.h"
#include "cvtrain/data/libpng_read.h"
#include "cvtrain/data/png_decode.h"

namespace cvtrain {
namespace {

// What the mask's file holds, as libpng hands it back.
struct MaskPixels {
  int colour = 0;            // PNG_COLOR_TYPE_GRAY, _PALETTE or _RGB after the transforms asked for
  int bytes_per_pixel = 1;   // 2 for 16-bit ids
  std::vector<Colour> plte;  // a palette PNG's colours
};

// Gray stays ids (1-, 2- and 4-bit ones unpacked, not scaled; 16-bit ones whole), palette PNGs
// stay indices, colour becomes 8-bit RGB; alpha is dropped.
void ask_for_ids(png_structp png, png_infop info, void* context) {
  MaskPixels& read = *static_cast<MaskPixels*>(context);
  const int colour = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (colour & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  if (depth < 8) png_set_packing(png);
  if ((colour & PNG_COLOR_MASK_COLOR) && colour != PNG_COLOR_TYPE_PALETTE && depth == 16) png_set_strip_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  read.colour = colour == PNG_COLOR_TYPE_PALETTE  ? PNG_COLOR_TYPE_PALETTE
                : (colour & PNG_COLOR_MASK_COLOR) ? PNG_COLOR_TYPE_RGB
                                                  : PNG_COLOR_TYPE_GRAY;
  read.bytes_per_pixel = read.colour == PNG_COLOR_TYPE_RGB ? 3 : (depth == 16 ? 2 : 1);
  if (read.colour == PNG_COLOR_TYPE_PALETTE) {
    png_colorp entries = nullptr;
    int count = 0;
    if (png_get_PLTE(png, info, &entries, &count) == 0) png_error(png, "a palette image without its palette");
    for (int i = 0; i < count; ++i) read.plte.push_back({entries[i].red, entries[i].green, entries[i].blue});
  }
}

uint32_t packed(const Colour& c) { return uint32_t{c[0]} << 16 | uint32_t{c[1]} << 8 | c[2]; }

std::string colour_text(const Colour& c) { return fmt::format("({}, {}, {})", c[0], c[1], c[2]); }

std::unordered_map<uint32_t, uint8_t> colour_ids(const std::vector<Colour>& palette) {
  std::unordered_map<uint32_t, uint8_t> ids;
  for (size_t i = palette.size(); i-- > 0;) ids[packed(palette[i])] = static_cast<uint8_t>(i);  // the first class of a colour wins
  return ids;
}

std::string pixel_at(size_t at, int width) { return fmt::format("x {}, y {}", at % width, at / width); }

// A palette PNG: index ignore_index is ignored; the others are ids by their colour in the
// coding's palette, or as they are without one.
void ids_of_palette_png(const MaskPixels& read, const std::vector<uint8_t>& data, const MaskCoding& coding, const std::string& name,
                        LabelMask& mask) {
  std::array<int, 256> id_of;
  id_of.fill(-1);
  const auto by_colour = colour_ids(coding.palette);
  for (size_t i = 0; i < 256; ++i) {
    if (static_cast<int>(i) == coding.ignore_index)
      id_of[i] = coding.ignore_index;
    else if (coding.palette.empty())
      id_of[i] = static_cast<int>(i);
    else if (i < read.plte.size()) {
      const auto found = by_colour.find(packed(read.plte[i]));
      if (found != by_colour.end()) id_of[i] = found->second;
    }
  }
  mask.ids.resize(data.size());
  for (size_t at = 0; at < data.size(); ++at) {
    const uint8_t index = data[at];
    if (id_of[index] < 0) {
      if (index >= read.plte.size())
        throw Error(fmt::format("{}: palette index {} (at {}) is beyond the file's {} colours", name, index, pixel_at(at, mask.width),
                                read.plte.size()));
      throw Error(fmt::format("{}: colour {} (palette index {}, at {}) is not in data.palette ({} colours, {} for class 0)", name,
                              colour_text(read.plte[index]), index, pixel_at(at, mask.width), coding.palette.size(),
                              colour_text(coding.palette.front())));
    }
    mask.ids[at] = static_cast<uint8_t>(id_of[index]);
  }
}

void ids_of_rgb_png(const std::vector<uint8_t>& data, const MaskCoding& coding, const std::string& name, LabelMask& mask) {
  if (coding.palette.empty())
    throw Error(
        fmt::format("{}: an RGB mask, and no data.palette to read its colours as classes (a list of [r, g, b], class 0's first)", name));
  const auto by_colour = colour_ids(coding.palette);
  mask.ids.resize(data.size() / 3);
  uint32_t last = ~0u;
  uint8_t last_id = 0;
  for (size_t at = 0; at < mask.ids.size(); ++at) {
    const Colour c{data[3 * at], data[3 * at + 1], data[3 * at + 2]};
    const uint32_t key = packed(c);
    if (key != last) {  // masks are runs of one colour: look each run up once
      const auto found = by_colour.find(key);
      if (found == by_colour.end())
        throw Error(fmt::format("{}: colour {} (at {}) is not in data.palette ({} colours, {} for class 0)", name, colour_text(c),
                                pixel_at(at, mask.width), coding.palette.size(), colour_text(coding.palette.front())));
      last = key;
      last_id = found->second;
    }
    mask.ids[at] = last_id;
  }
}

void ids_of_gray_png(const std::vector<uint8_t>& data, const std::string& name, LabelMask& mask) {
  if (data.size() == static_cast<size_t>(mask.width) * mask.height) {  // 8-bit ids
    mask.ids = data;
    return;
  }
  mask.ids.resize(data.size() / 2);
  for (size_t at = 0; at < mask.ids.size(); ++at) {
    const unsigned id = unsigned{data[2 * at]} << 8 | data[2 * at + 1];
    if (id > 255)
      throw Error(fmt::format("{}: id {} (at {}) in a 16-bit mask; cvtrain's masks hold ids 0 to 255", name, id, pixel_at(at, mask.width)));
    mask.ids[at] = static_cast<uint8_t>(id);
  }
}

void reduce_zero_label(LabelMask& mask, int ignore_index) {
  for (uint8_t& id : mask.ids) {
    if (id == ignore_index) continue;
    id = id == 0 ? static_cast<uint8_t>(ignore_index) : static_cast<uint8_t>(id - 1);
  }
}

void check_ids(const LabelMask& mask, const MaskCoding& coding, const std::string& name) {
  if (coding.num_classes <= 0) return;
  const std::array<uint64_t, 256> counts = id_counts(mask);
  for (int id = static_cast<int>(coding.num_classes); id < 256; ++id) {
    if (id == coding.ignore_index || counts[id] == 0) continue;
    size_t at = 0;
    while (mask.ids[at] != id) ++at;
    throw Error(
        fmt::format("{}: label id {} (at {}{}, {} pixels) is not a class: model.num_classes is {}, so ids go from 0 to {} "
                    "and {} (data.ignore_index) marks unlabelled pixels",
                    name, id, pixel_at(at, mask.width), coding.reduce_zero_label ? ", after reduce_zero_label" : "", counts[id],
                    coding.num_classes, coding.num_classes - 1, coding.ignore_index));
  }
}

}  // namespace

LabelMask decode_mask(const std::vector<uint8_t>& bytes, const std::string& name, const MaskCoding& coding) {
  if (!is_png(bytes))
    throw Error(fmt::format("{}: {} is not a PNG; masks are PNG files (a JPEG's compression would change the ids at every edge)", name,
                            bytes.empty() ? "an empty file" : "this"));
  libpng::Read png;
  png.bytes = &bytes;
  MaskPixels read;
  if (!libpng::run(png, ask_for_ids, &read)) throw Error(fmt::format("{}: damaged PNG (libpng: {})", name, png.error));
  LabelMask mask;
  mask.width = png.width;
  mask.height = png.height;
  if (png.pixels.size() != static_cast<size_t>(read.bytes_per_pixel) * mask.width * mask.height)
    throw Error(fmt::format("{}: damaged PNG (rows of an unexpected size)", name));
  if (read.colour == PNG_COLOR_TYPE_PALETTE)
    ids_of_palette_png(read, png.pixels, coding, name, mask);
  else if (read.colour == PNG_COLOR_TYPE_RGB)
    ids_of_rgb_png(png.pixels, coding, name, mask);
  else
    ids_of_gray_png(png.pixels, name, mask);
  if (coding.reduce_zero_label) reduce_zero_label(mask, coding.ignore_index);
  check_ids(mask, coding, name);
  return mask;
}

std::vector<Colour> voc_palette(int colours) {
  std::vector<Colour> palette;
  for (int id = 0; id < colours; ++id) {
    Colour c{0, 0, 0};
    for (int shift = 7, bits = id; bits > 0; --shift, bits >>= 3)
      for (int channel = 0; channel < 3; ++channel) c[channel] |= static_cast<uint8_t>(((bits >> channel) & 1) << shift);
    palette.push_back(c);
  }
  return palette;
}

std::array<uint64_t, 256> id_counts(const LabelMask& mask) {
  std::array<uint64_t, 256> counts{};
  for (uint8_t id : mask.ids) ++counts[id];
  return counts;
}

}  // namespace cvtrain
