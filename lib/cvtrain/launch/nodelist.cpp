// Host-list expansion: split at top-level commas, then expand bracket groups left to right,
// keeping each range's zero padding ("gpu[08-10]" -> gpu08 gpu09 gpu10).
#include "cvtrain/launch/nodelist.h"

#include <fmt/format.h>

#include "cvtrain/core/error.h"

namespace cvtrain {
namespace {

std::vector<std::string> split_top_level(const std::string& text, const std::string& whole) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (const char c : text) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) throw Error(fmt::format("node list '{}': unbalanced ']'", whole));
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) throw Error(fmt::format("node list '{}': unbalanced '['", whole));
  parts.push_back(current);
  return parts;
}

// "01-04" -> 01 02 03 04; "7" -> 7.
std::vector<std::string> expand_range(const std::string& range, const std::string& whole) {
  const size_t dash = range.find('-');
  const std::string first = range.substr(0, dash);
  const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
  const bool digits = !first.empty() && !last.empty() && first.find_first_not_of("0123456789") == std::string::npos &&
                      last.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) throw Error(fmt::format("node list '{}': '{}' is not a number or a range of numbers", whole, range));
  const long lo = std::stol(first), hi = std::stol(last);
  if (hi < lo || hi - lo > 100000) throw Error(fmt::format("node list '{}': range '{}' is empty or too large", whole, range));
  std::vector<std::string> out;
  for (long v = lo; v <= hi; ++v) out.push_back(fmt::format("{:0{}}", v, first.size()));
  return out;
}

void expand_host(const std::string& pattern, const std::string& whole, std::vector<std::string>& out) {
  const size_t open = pattern.find('[');
  if (open == std::string::npos) {
    if (!pattern.empty()) out.push_back(pattern);
    return;
  }
  const size_t close = pattern.find(']', open);
  const std::string prefix = pattern.substr(0, open), rest = pattern.substr(close + 1);
  for (const auto& range : split_top_level(pattern.substr(open + 1, close - open - 1), whole))
    for (const auto& number : expand_range(range, whole)) expand_host(prefix + number + rest, whole, out);
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  for (const auto& pattern : split_top_level(list, list)) expand_host(pattern, list, hosts);
  if (hosts.empty()) throw Error(fmt::format("node list '{}' names no host", list));
  return hosts;
}

}  // namespace cvtrain
