// Small string helpers shared by recipe errors and the CLI: edit distance and "did you mean".
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

size_t edit_distance(const std::string& a, const std::string& b);
// The closest candidate when it is close enough to be a plausible typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& parts, const std::string& separator);
// `text` as a JSON string literal, quotes included.
std::string json_string(const std::string& text);
// `text` with & < > " ' as entities, for HTML and SVG.
std::string xml_escape(const std::string& text);

}  // namespace cvtrain
