// jpeg_coding: walks the marker segments from SOI to the first SOF (ITU T.81, B.1.1.3 and B.2.2);
// encode_jpeg through TurboJPEG.
#include "cvtrain/data/jpeg_coding.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <memory>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

struct TjCompressorCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};

}  // namespace

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  thread_local std::unique_ptr<void, TjCompressorCloser> handle(tjInitCompress());
  unsigned char* out = nullptr;
  unsigned long size = 0;
  if (tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height, image.channels == 1 ? TJPF_GRAY : TJPF_RGB,
                  &out, &size, image.channels == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, TJFLAG_ACCURATEDCT) != 0)
    throw Error(fmt::format("JPEG encoding failed ({})", tjGetErrorStr2(handle.get())));
  std::vector<uint8_t> bytes(out, out + size);
  tjFree(out);
  return bytes;
}

std::optional<JpegCoding> jpeg_coding(const std::vector<uint8_t>& bytes) {
  const size_t size = bytes.size();
  if (size < 4 || bytes[0] != 0xFF || bytes[1] != 0xD8) return std::nullopt;
  size_t at = 2;
  while (at + 4 <= size) {
    if (bytes[at] != 0xFF) return std::nullopt;  // segments follow each other until the first scan
    const uint8_t marker = bytes[at + 1];
    if (marker == 0xFF) {  // fill bytes before a marker
      ++at;
      continue;
    }
    const size_t length = static_cast<size_t>(bytes[at + 2]) << 8 | bytes[at + 3];
    // SOF0-15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      if (at + 10 > size || length < 8) return std::nullopt;
      JpegCoding coding;
      const int kind = marker - 0xC0;
      coding.progressive = kind == 2 || kind == 6 || kind == 10 || kind == 14;
      coding.lossless = kind == 3 || kind == 7 || kind == 11 || kind == 15;
      coding.arithmetic = kind >= 9;
      coding.precision = bytes[at + 4];
      coding.height = bytes[at + 5] << 8 | bytes[at + 6];
      coding.width = bytes[at + 7] << 8 | bytes[at + 8];
      coding.components = bytes[at + 9];
      // Each component: id, then H (high nibble) and V sampling factors, then its quantisation table.
      for (int c = 0; c < coding.components && at + 12 + 3 * static_cast<size_t>(c) <= size; ++c) {
        const uint8_t factors = bytes[at + 11 + 3 * static_cast<size_t>(c)];
        if (c == 0) {
          coding.luma_h = factors >> 4;
          coding.luma_v = factors & 0x0F;
        } else if (factors != 0x11) {
          coding.chroma_once = false;
        }
      }
      return coding;
    }
    if (marker == 0xDA || marker == 0xD9) return std::nullopt;  // a scan or the end before any frame header
    at += 2 + length;
  }
  return std::nullopt;
}

bool gpu_decodable(const JpegCoding& c) {
  return !c.progressive && !c.arithmetic && !c.lossless && c.precision == 8 && (c.components == 1 || c.components == 3) && c.width > 0 &&
         c.height > 0;
}

bool hardware_decodable_subsampling(const JpegCoding& c) {
  if (c.components == 1) return true;
  const bool named = (c.luma_h == 1 || c.luma_h == 2) && (c.luma_v == 1 || c.luma_v == 2);  // 4:4:4, 4:2:2, 4:2:0, 4:4:0
  return c.components == 3 && c.chroma_once && named;
}

}  // namespace cvtrain
