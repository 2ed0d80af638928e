// Test images written with TurboJPEG: solid-colour JPEGs and small ImageFolder trees.
#pragma once

#include <turbojpeg.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace cvtrain::testing {

// A w x h RGB JPEG of colour (red, 40, blue).
inline std::vector<uint8_t> encode_jpeg(int w, int h, uint8_t red, uint8_t blue = 40) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3, 40);
  for (size_t i = 0; i < rgb.size(); i += 3) {
    rgb[i] = red;
    rgb[i + 2] = blue;
  }
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, rgb.data(), w, 0, h, TJPF_RGB, &jpeg, &size, TJSAMP_444, 95, 0);
  std::vector<uint8_t> bytes;
  if (rc == 0) bytes.assign(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed");
  return bytes;
}

inline void write_bytes(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  dir.write(name, "");
  std::ofstream(dir.file(name), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace cvtrain::testing
