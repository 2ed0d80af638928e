// The look shared by `cvtrain report`'s pages (a run's, a sweep's): one stylesheet, figure tiles,
// chart cards and tables, all inline so a page needs no script and no network. Torch-free.
#pragma once

#include <string>
#include <vector>

namespace cvtrain {

// The pages' CSS, for their <style>.
const char* report_style();

// A key figure: an uppercase label, the value large, a detail line under it.
std::string html_tile(const std::string& label, const std::string& value, const std::string& detail = "");

// A chart's svg in a white card, with a caption line under it when given.
std::string html_card(const std::string& svg, const std::string& caption);

// A whole page: <title> `title`, heading `heading` over the `subtitle` line, `body` (HTML), and a
// footer naming the cvtrain version, `generated_at` and `sources` (what the page was read from),
// with `notes` (what was missing) under it. Text arguments are escaped here.
struct HtmlPage {
  std::string title, heading, subtitle, body, sources, generated_at;
  std::vector<std::string> notes;
};
std::string html_page(const HtmlPage& page);

// A <table> of `header` and `rows`; cells are text (escaped here).
std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace cvtrain
