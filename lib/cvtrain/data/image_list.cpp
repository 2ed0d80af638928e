// Image list parsing (CSV with RFC 4180 quotes, TSV, PATH LABEL text) and the dataset over it.
#include "cvtrain/data/image_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/text_file.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/recipe/data_format.h"

namespace cvtrain {
namespace {

namespace fs = std::filesystem;

// The header names a path and a label column may have (any case; spaces and dashes as '_').
const ListColumn kPathColumn{
    "path", {"path", "file", "filename", "file_name", "filepath", "file_path", "image", "image_path", "image_name", "img", "img_path"}};
const ListColumn kLabelColumn{"label", {"label", "class", "class_name", "classname", "category", "target"}};

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// One line's fields; quoted fields (RFC 4180: "a, b" and "" for a quote) for CSV.
std::vector<std::string> split_fields(const std::string& line, char separator, const std::string& where) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"' && trimmed(fields.back()).empty()) {
      quoted = true;
      fields.back().clear();
    } else if (c == separator) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) throw Error(fmt::format("{}: a quote (\") is not closed on its line", where));
  for (auto& f : fields) f = trimmed(f);
  return fields;
}

std::string column_key(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return c == ' ' || c == '-' ? '_' : std::tolower(c); });
  return name;
}

// The index of the header's column named one of `names`; throws naming the columns found.
size_t find_column(const std::vector<std::string>& header, const ListColumn& column, const ListColumn& other, const std::string& where) {
  for (size_t i = 0; i < header.size(); ++i)
    if (std::find(column.names.begin(), column.names.end(), column_key(header[i])) != column.names.end()) return i;
  throw Error(fmt::format("{}: no {} column among ({}); the first line names the columns: call the {} one of {} and the {} one of {}",
                          where, column.role, join(header, ", "), column.role, join(column.names, ", "), other.role,
                          join(other.names, ", ")));
}

// The file's lines (a UTF-8 byte-order mark, as Excel writes, dropped; CRLF endings taken).
std::vector<std::string> lines_of(const std::string& path) {
  std::optional<std::string> text = read_text_file(path);
  if (!text) throw Error(fmt::format("{}: cannot be read", path));
  if (text->rfind("\xEF\xBB\xBF", 0) == 0) text->erase(0, 3);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

bool skipped(const std::string& line) {
  const std::string t = trimmed(line);
  return t.empty() || t.front() == '#';
}

using Entry = ListEntry;

}  // namespace

std::vector<ListEntry> read_list_table(const std::string& path, const ListColumn& first, const ListColumn& second) {
  const std::vector<std::string> lines = lines_of(path);
  const char separator = lower_extension(path) == ".tsv" ? '\t' : ',';
  size_t at = 0;
  while (at < lines.size() && skipped(lines[at])) ++at;
  if (at == lines.size())
    throw Error(fmt::format("{}: no lines (a header naming the {} and {} columns, then one sample a line)", path, first.role, second.role));
  const std::string header_where = fmt::format("{}:{}", path, at + 1);
  const std::vector<std::string> header = split_fields(lines[at], separator, header_where);
  const size_t path_column = find_column(header, first, second, header_where);
  const size_t label_column = find_column(header, second, first, header_where);
  std::vector<Entry> entries;
  for (++at; at < lines.size(); ++at) {
    if (skipped(lines[at])) continue;
    const std::string where = fmt::format("{}:{}", path, at + 1);
    const std::vector<std::string> fields = split_fields(lines[at], separator, where);
    if (fields.size() != header.size())
      throw Error(fmt::format("{}: {} field(s), the header has {} ({}){}", where, fields.size(), header.size(), join(header, ", "),
                              separator == ',' ? "; a path with a comma in it goes in double quotes" : ""));
    entries.push_back(Entry{fields[path_column], fields[label_column]});
    if (entries.back().path.empty() || entries.back().label.empty())
      throw Error(fmt::format("{}: an empty {}", where, entries.back().path.empty() ? first.role : second.role));
  }
  return entries;
}

namespace {

// PATH LABEL lines (Caffe's train.txt): the label is the last word, the path the rest of the line.
std::vector<Entry> text_entries(const std::vector<std::string>& lines, const std::string& path) {
  std::vector<Entry> entries;
  for (size_t at = 0; at < lines.size(); ++at) {
    if (skipped(lines[at])) continue;
    const std::string line = trimmed(lines[at]);
    const auto gap = line.find_last_of(" \t");
    if (gap == std::string::npos)
      throw Error(fmt::format("{}:{}: '{}' is not PATH LABEL (a path, a space, its class)", path, at + 1, line));
    entries.push_back(Entry{trimmed(line.substr(0, gap)), line.substr(gap + 1)});
  }
  return entries;
}

bool whole_number(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Labels as numbers: the numbers themselves when every label is one, else sorted names.
void number_labels(const std::vector<Entry>& entries, ImageList& list, const std::string& path) {
  if (std::all_of(entries.begin(), entries.end(), [](const Entry& e) { return whole_number(e.label); })) {
    constexpr int64_t kMostClasses = 1000000;
    int64_t largest = 0;
    for (const Entry& e : entries) list.labels.push_back(std::stoll(e.label));
    for (int64_t l : list.labels) largest = std::max(largest, l);
    if (largest >= kMostClasses)
      throw Error(fmt::format("{}: label {} numbers a class past a million; number the classes from 0, or name them", path, largest));
    for (int64_t l = 0; l <= largest; ++l) list.classes.push_back(std::to_string(l));
    return;
  }
  std::map<std::string, int64_t> number;
  for (const Entry& e : entries) number.emplace(e.label, 0);
  for (auto& [name, label] : number) {
    label = static_cast<int64_t>(list.classes.size());
    list.classes.push_back(name);
  }
  for (const Entry& e : entries) list.labels.push_back(number.at(e.label));
}

// Paths relative to the list's folder, as a list written beside its images means them.
std::string resolved(const std::string& file, const fs::path& base) {
  const fs::path p(file);
  return p.is_absolute() ? file : (base / p).lexically_normal().string();
}

// A list whose paths point nowhere fails here, not as a run of unreadable samples.
void check_some_exist(const ImageList& list, const std::string& path, const std::string& root) {
  constexpr size_t kChecked = 20;
  const size_t n = list.files.size();
  if (n == 0) return;
  std::error_code ec;
  for (size_t i = 0; i < std::min(n, kChecked); ++i)
    if (fs::exists(list.files[i * n / std::min(n, kChecked)], ec)) return;
  const std::string base =
      root.empty() ? fmt::format("the list's folder, {}; data.root (--root) names another", fs::absolute(path).parent_path().string())
                   : fmt::format("data.root, {}", root);
  throw Error(fmt::format("{}: none of the {} listed files checked exists, e.g. {} (relative paths are taken from {})", path,
                          std::min(n, kChecked), list.files.front(), base));
}

}  // namespace

ImageList read_image_list(const std::string& path, const std::string& root) {
  const std::string ext = lower_extension(path);
  if (!is_image_list_path(path))
    throw Error(
        fmt::format("{}: an image list is a .csv or .tsv file (a header naming the path and label columns) or a .txt file of "
                    "PATH LABEL lines",
                    path));
  const std::vector<Entry> entries = ext == ".txt" ? text_entries(lines_of(path), path) : read_list_table(path, kPathColumn, kLabelColumn);
  if (entries.empty()) throw Error(fmt::format("{}: lists no images", path));
  ImageList list;
  const fs::path base = root.empty() ? fs::absolute(path).parent_path() : fs::absolute(root);
  for (const Entry& e : entries) list.files.push_back(resolved(e.path, base));
  number_labels(entries, list, path);
  return list;
}

ImageListDataset::ImageListDataset(const std::string& list_path, int64_t limit, const std::string& root)
    : list_(read_image_list(list_path, root)) {
  check_some_exist(list_, list_path, root);
  keep_spread(list_.files, list_.labels, limit);
}

RawSample ImageListDataset::read(size_t index) const {
  RawSample sample;
  sample.encoded = read_file_bytes(list_.files[index]);
  return sample;
}

}  // namespace cvtrain
