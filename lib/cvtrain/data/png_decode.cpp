// libpng reports errors by longjmp: the setjmp frame (libpng::run) holds no C++ objects; what it
// fills lives in the caller's libpng::Read.
#include "cvtrain/data/png_decode.h"

#include <fmt/format.h>
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "cvtrain/core/error.h"
#include "cvtrain/data/libpng_read.h"

namespace cvtrain {
namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  static_cast<libpng::Read*>(png_get_error_ptr(png))->error = message;
  png_longjmp(png, 1);
}

void on_warning(png_structp png, png_const_charp message) {
  auto* read = static_cast<libpng::Read*>(png_get_error_ptr(png));
  if (read->warning.empty()) read->warning = message;
}

void read_bytes(png_structp png, png_bytep out, size_t count) {
  auto* read = static_cast<libpng::Read*>(png_get_io_ptr(png));
  if (read->bytes->size() - read->at < count) png_error(png, "the data ends before the image does");
  std::memcpy(out, read->bytes->data() + read->at, count);
  read->at += count;
}

// OpenCV's transforms for an 8-bit colour image (grfmt_png.cpp, readData), applied by libpng in its
// own fixed order, so that the pixels are the ones OpenCV (and Pillow's convert("RGB")) gives.
void ask_for_rgb8(png_structp png, png_infop info, void*) {
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (depth == 16) png_set_strip_16(png);
  png_set_strip_alpha(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((color & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
}

}  // namespace

bool libpng::run(Read& read, AskForTransforms ask, void* context) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &read, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(png ? &png : nullptr, nullptr, nullptr);
    read.error = "out of memory";
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &read, read_bytes);
  png_read_info(png, info);
  ask(png, info, context);
  read.width = static_cast<int>(png_get_image_width(png, info));
  read.height = static_cast<int>(png_get_image_height(png, info));
  const size_t row_bytes = png_get_rowbytes(png, info);
  read.pixels.resize(row_bytes * static_cast<size_t>(read.height));
  read.rows.resize(static_cast<size_t>(read.height));
  for (size_t y = 0; y < read.rows.size(); ++y) read.rows[y] = read.pixels.data() + y * row_bytes;
  png_read_image(png, read.rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

bool is_png(const std::vector<uint8_t>& bytes) {
  return bytes.size() >= sizeof kSignature && std::memcmp(bytes.data(), kSignature, sizeof kSignature) == 0;
}

Image decode_png(const std::vector<uint8_t>& bytes, const std::string& name) {
  libpng::Read read;
  read.bytes = &bytes;
  if (!libpng::run(read, ask_for_rgb8, nullptr))
    throw Error(fmt::format("{}: damaged PNG (libpng: {}{})", name, read.error,
                            read.warning.empty() ? "" : fmt::format("; it warned first: {}", read.warning)));
  if (read.pixels.size() != size_t{3} * read.width * read.height)
    throw Error(fmt::format("{}: damaged PNG (rows of an unexpected size after the RGB transforms)", name));
  return Image{std::move(read.pixels), read.height, read.width, 3};
}

}  // namespace cvtrain
