// The report pages' shared stylesheet and building blocks (see report_html.h).
#include "cvtrain/observe/report_html.h"

#include <fmt/format.h>

#include <cctype>

#include "cvtrain/core/text.h"
#include "cvtrain/core/version.h"

namespace cvtrain {
namespace {

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; background: #f4f5f7; color: #222; }
main { max-width: 1380px; margin: 0 auto; padding: 20px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; }
.sub { color: #555; margin: 0 0 16px; font-size: 14px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 10px; }
.tile { background: #fff; border-radius: 8px; padding: 10px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
.tile .label { color: #666; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile .value { font-size: 22px; font-weight: 600; margin-top: 2px; } .tile .detail { color: #666; font-size: 12px; overflow-wrap: anywhere; }
.verdicts { list-style: none; padding: 0; margin: 0; }
.verdicts li { background: #fff; border-left: 5px solid #e45756; border-radius: 6px; padding: 10px 14px; margin-bottom: 8px;
  box-shadow: 0 1px 2px rgba(0,0,0,.08); font-size: 14px; }
.verdicts li.ok { border-left-color: #54a24b; } .verdicts li.info { border-left-color: #f2b134; }
.kind { display: inline-block; min-width: 120px; font-weight: 600; color: #444; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px; }
.card { background: #fff; border-radius: 8px; padding: 8px 10px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
.card p { margin: 2px 8px 6px; color: #666; font-size: 12px; }
pre { background: #fff; border-radius: 8px; padding: 12px 16px; font-size: 12px; overflow: auto; max-height: 460px; margin: 0;
  box-shadow: 0 1px 2px rgba(0,0,0,.08); }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 14px; align-items: start; }
table { border-collapse: collapse; width: 100%; word-break: break-word; background: #fff; border-radius: 8px; font-size: 13px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
td, th { padding: 5px 12px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th { color: #555; font-weight: 600; white-space: nowrap; word-break: normal; }
footer { color: #777; font-size: 12px; margin-top: 28px; }
h3 { font-size: 15px; margin: 8px 0; }
.track { display: inline-block; width: 200px; height: 10px; background: #e6e8eb; border-radius: 2px; vertical-align: middle; }
.bar { display: block; height: 10px; background: #4c78a8; border-radius: 2px; }
)";

// `text` escaped, with a line-break chance after each dot that ends a word ("augment.<wbr>label_smoothing"),
// so that a long recipe key wraps at its sections rather than mid-word; numbers keep their dots.
std::string breakable_at_keys(const std::string& text) {
  const std::string escaped = xml_escape(text);
  std::string out;
  for (size_t i = 0; i < escaped.size(); ++i) {
    out += escaped[i];
    if (escaped[i] == '.' && i > 0 && std::isalpha(static_cast<unsigned char>(escaped[i - 1])) && i + 1 < escaped.size() &&
        std::isalpha(static_cast<unsigned char>(escaped[i + 1])))
      out += "<wbr>";
  }
  return out;
}

}  // namespace

const char* report_style() { return kStyle; }

std::string html_tile(const std::string& label, const std::string& value, const std::string& detail) {
  return fmt::format("<div class=\"tile\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"detail\">{}</div></div>\n",
                     xml_escape(label), xml_escape(value), breakable_at_keys(detail));
}

std::string html_card(const std::string& svg, const std::string& caption) {
  return "<div class=\"card\">" + svg + (caption.empty() ? "" : "<p>" + xml_escape(caption) + "</p>") + "</div>\n";
}

std::string html_page(const HtmlPage& page) {
  std::string notes;
  for (const std::string& n : page.notes) notes += "<br>" + xml_escape(n);
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n"
      "<h1>{}</h1>\n<p class=\"sub\">{}</p>\n{}<footer>Written by cvtrain {} at {} from {}.{}</footer>\n</main>\n</body>\n</html>\n",
      xml_escape(page.title), kStyle, xml_escape(page.heading), xml_escape(page.subtitle), page.body, kVersion, xml_escape(page.generated_at),
      xml_escape(page.sources), notes);
}

std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table>\n<tr>";
  for (const std::string& h : header) out += "<th>" + xml_escape(h) + "</th>";
  out += "</tr>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + xml_escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace cvtrain
