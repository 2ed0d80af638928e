// jpeg_coding reads a JPEG's frame header as libjpeg-turbo wrote it: size, components and coding,
// so that the GPU decoder takes only what it can decode.
#include <catch2/catch.hpp>

#include <utility>

#include "cvtrain/data/jpeg_coding.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg_pixels;

namespace {

std::vector<uint8_t> pixels(int w, int h, int channels) {
  std::vector<uint8_t> p(static_cast<size_t>(w) * h * channels);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 13 % 251);
  return p;
}

}  // namespace

TEST_CASE("a baseline colour or gray JPEG is read as GPU-decodable with its size", "[data]") {
  const auto colour = jpeg_coding(encode_jpeg_pixels(pixels(37, 21, 3), 37, 21, TJPF_RGB));
  REQUIRE(colour);
  CHECK(colour->width == 37);
  CHECK(colour->height == 21);
  CHECK(colour->components == 3);
  CHECK(colour->precision == 8);
  CHECK_FALSE(colour->progressive);
  CHECK(gpu_decodable(*colour));
  const auto gray = jpeg_coding(encode_jpeg_pixels(pixels(16, 16, 1), 16, 16, TJPF_GRAY));
  REQUIRE(gray);
  CHECK(gray->components == 1);
  CHECK(gpu_decodable(*gray));
}

TEST_CASE("the luma sampling factors tell the chroma subsampling that nvJPEG's hardware engine refuses", "[data]") {
  const auto sampling = [](int subsampling) {
    const auto coding = jpeg_coding(encode_jpeg_pixels(pixels(64, 32, 3), 64, 32, TJPF_RGB, 90, subsampling));
    REQUIRE(coding);
    return std::pair{coding->luma_h, coding->luma_v};
  };
  CHECK(sampling(TJSAMP_444) == std::pair{1, 1});
  CHECK(sampling(TJSAMP_422) == std::pair{2, 1});
  CHECK(sampling(TJSAMP_420) == std::pair{2, 2});
  CHECK(sampling(TJSAMP_411) == std::pair{4, 1});  // luma four times as wide: not for the hardware engine
}

TEST_CASE("progressive and CMYK JPEGs go to the CPU decoder, and other bytes are no JPEG", "[data]") {
  const auto progressive = jpeg_coding(encode_jpeg_pixels(pixels(40, 30, 3), 40, 30, TJPF_RGB, 90, TJSAMP_420, TJFLAG_PROGRESSIVE));
  REQUIRE(progressive);
  CHECK(progressive->progressive);
  CHECK(progressive->width == 40);
  CHECK_FALSE(gpu_decodable(*progressive));
  const auto cmyk = jpeg_coding(encode_jpeg_pixels(pixels(8, 8, 4), 8, 8, TJPF_CMYK, 90, TJSAMP_444));
  REQUIRE(cmyk);
  CHECK(cmyk->components == 4);
  CHECK_FALSE(gpu_decodable(*cmyk));
  CHECK_FALSE(jpeg_coding({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}));
  std::vector<uint8_t> cut = encode_jpeg_pixels(pixels(8, 8, 3), 8, 8, TJPF_RGB);
  cut.resize(20);  // ends inside the headers, before the frame header
  CHECK_FALSE(jpeg_coding(cut));
}
