// PNG as the specification lays it out: signature, IHDR, one IDAT of deflated rows (filter 0),
// IEND, each chunk with its CRC-32; written to a temporary name and renamed into place.
#include "cvtrain/core/png_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

void put_chunk(std::vector<uint8_t>& out, const char type[5], const std::vector<uint8_t>& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_u32(out, static_cast<uint32_t>(crc32(0L, out.data() + start, static_cast<uInt>(out.size() - start))));
}

uint8_t colour_type(int channels) {
  switch (channels) {
    case 1: return 0;
    case 3: return 2;
    case 4: return 6;
    default: throw Error(fmt::format("a PNG holds 1, 3 or 4 channels, not {}", channels));
  }
}

// Signature, IHDR, the extra chunks (PLTE), one IDAT of the deflated rows, IEND; written to a
// temporary name and renamed into place.
void write_png_file(const std::string& path, const uint8_t* pixels, int width, int height, int channels, uint8_t colour,
                    const std::vector<std::pair<const char*, std::vector<uint8_t>>>& extra) {
  std::vector<uint8_t> header;
  put_u32(header, static_cast<uint32_t>(width));
  put_u32(header, static_cast<uint32_t>(height));
  header.insert(header.end(), {8, colour, 0, 0, 0});
  const size_t row = static_cast<size_t>(width) * channels;
  std::vector<uint8_t> raw;
  raw.reserve((row + 1) * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), pixels + y * row, pixels + (y + 1) * row);
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> packed(packed_size);
  if (compress2(packed.data(), &packed_size, raw.data(), static_cast<uLong>(raw.size()), 6) != Z_OK)
    throw Error("cannot deflate the PNG's pixels");
  packed.resize(packed_size);
  std::vector<uint8_t> file{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  put_chunk(file, "IHDR", header);
  for (const auto& [type, data] : extra) put_chunk(file, type, data);
  put_chunk(file, "IDAT", packed);
  put_chunk(file, "IEND", {});
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    if (!out) throw Error(fmt::format("cannot write {}", path));
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) throw Error(fmt::format("cannot write {}: {}", path, error.message()));
}

}  // namespace

void write_png(const std::string& path, const uint8_t* pixels, int width, int height, int channels) {
  write_png_file(path, pixels, width, height, channels, colour_type(channels), {});
}

void write_palette_png(const std::string& path, const uint8_t* indices, int width, int height,
                       const std::vector<std::array<uint8_t, 3>>& palette) {
  if (palette.empty() || palette.size() > 256) throw Error(fmt::format("a PNG palette holds 1 to 256 colours, not {}", palette.size()));
  std::vector<uint8_t> plte;
  for (const auto& colour : palette) plte.insert(plte.end(), colour.begin(), colour.end());
  write_png_file(path, indices, width, height, 1, 3, {{"PLTE", plte}});
}

}  // namespace cvtrain
