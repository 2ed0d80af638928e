// read_text_file and write_file_atomically (see text_file.h).
#include "cvtrain/core/text_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cvtrain/core/error.h"

namespace cvtrain {

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << contents;
    out.flush();
    if (!out) throw Error(fmt::format("{}: cannot write ({})", temporary, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw Error(fmt::format("{}: cannot rename into place ({})", path, ec.message()));
}

}  // namespace cvtrain
