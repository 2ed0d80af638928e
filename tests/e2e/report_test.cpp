// `cvtrain report` end to end: a two-rank run's page and a sweep's page opened in Debian's headless
// Chromium, whose own layout says every chart has its size and its marks, and whose screenshots
// show them in their colours. The screenshots are kept as report-screenshot.png and
// sweep-report-screenshot.png in the build's tests/ folder, wherever the suite is run from.
#include "torch_catch.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "run_shell.h"

using cvtrain::testing::read_text;
using cvtrain::testing::shell;
using cvtrain::testing::TempDir;

namespace {

// Appended to a copy of the page (the report itself has no script): one line per chart with the
// size the browser laid it out at, and how many of its marks have a drawn, non-empty box.
const char* kLayoutProbe = R"JS(<script>
const lines = [...document.querySelectorAll('svg.chart')].map(svg => {
  const box = svg.getBoundingClientRect();
  const marks = [...svg.querySelectorAll('.series')];
  const drawn = marks.filter(m => { const b = m.getBBox(); return b.width > 0 || b.height > 0; });
  return `${svg.dataset.chart} ${Math.round(box.width)}x${Math.round(box.height)} ${drawn.length}/${marks.length}`;
});
const out = document.createElement('pre');
out.id = 'layout-probe';
out.textContent = lines.join('\n');
document.body.appendChild(out);
</script>)JS";

struct ChartLayout {
  int width = 0, height = 0, drawn = 0, marks = 0;
};

std::map<std::string, ChartLayout> charts_in(const std::string& dom) {
  std::map<std::string, ChartLayout> charts;
  const std::regex line("([a-z_]+) ([0-9]+)x([0-9]+) ([0-9]+)/([0-9]+)");
  const size_t probe = dom.find("id=\"layout-probe\"");
  if (probe == std::string::npos) return charts;
  const std::string text = dom.substr(probe);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
    charts[(*it)[1]] = ChartLayout{std::stoi((*it)[2]), std::stoi((*it)[3]), std::stoi((*it)[4]), std::stoi((*it)[5])};
  return charts;
}

// Pixels within a few levels of an RGB colour.
int64_t pixels_near(const cvtrain::Image& image, int r, int g, int b) {
  int64_t n = 0;
  for (size_t i = 0; i + 2 < image.pixels.size(); i += static_cast<size_t>(image.channels))
    if (std::abs(image.pixels[i] - r) < 8 && std::abs(image.pixels[i + 1] - g) < 8 && std::abs(image.pixels[i + 2] - b) < 8) ++n;
  return n;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const std::string kChromium = std::string(CVTRAIN_CHROMIUM) + " --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=";

std::string browser(const TempDir& dir) { return "timeout 120 " + kChromium + dir.file("chrome") + " "; }

// The charts of the page `html` as headless Chromium lays them out.
std::map<std::string, ChartLayout> browser_layout(const TempDir& dir, const std::string& html) {
  std::string probed = html;
  probed.insert(probed.rfind("</body>"), kLayoutProbe);
  dir.write("probed.html", probed);
  const cvtrain::testing::Run dom = shell(browser(dir) + "--dump-dom file://" + dir.file("probed.html") + " 2>/dev/null", dir);
  REQUIRE(dom.exit_code == 0);
  INFO(dom.output.substr(0, 400));
  return charts_in(dom.output);
}

// Each chart of `ids` is there, laid out at a readable size, with every mark drawn.
void check_drawn(const std::map<std::string, ChartLayout>& charts, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    INFO("chart " << id);
    REQUIRE(charts.count(id) == 1);
    const ChartLayout& c = charts.at(id);
    CHECK(c.width >= 500);
    CHECK(c.height >= 150);
    CHECK(c.marks > 0);
    CHECK(c.drawn == c.marks);
  }
}

// A screenshot of the page at `page`, decoded; kept as `keep` in the build's tests/ folder (never in
// the folder the suite happens to run in, which may be the source tree).
cvtrain::Image screenshot(const TempDir& dir, const std::string& page, int width, int height, const std::string& keep) {
  const cvtrain::testing::Run shot = shell(browser(dir) + fmt::format("--window-size={},{} --screenshot=", width, height) +
                                               dir.file("shot.png") + " file://" + page + " 2>&1",
                                           dir);
  REQUIRE(shot.exit_code == 0);
  const std::string kept = std::string(CVTRAIN_TEST_BINARY_DIR) + "/" + keep;
  std::filesystem::copy_file(dir.file("shot.png"), kept, std::filesystem::copy_options::overwrite_existing);
  return cvtrain::decode_view(read_bytes(dir.file("shot.png")), kept, cvtrain::ImageView::exact);
}

}  // namespace

TEST_CASE("cvtrain report: a two-rank run's page renders in headless Chromium with every chart drawn", "[e2e][ranks][browser]") {
  TempDir dir;
  const cvtrain::testing::Run run = shell(
      "$CVTRAIN --recipe $RECIPE data.max_samples=1536 data.max_val_samples=256 train.epochs=2 train.log_every=3 "
      "distributed.nproc_per_node=2 distributed.master_port=" +
          cvtrain::testing::port() + " output=" + dir.file("run") + " > " + dir.file("train.log") +
          " 2>&1 || exit 9\n"
          "$CVTRAIN eval --recipe $RECIPE data.max_val_samples=256 --checkpoint " +
          dir.file("run") + " output=" + dir.file("run") + " >> " + dir.file("train.log") +
          " 2>&1 || exit 8\n"
          "$CVTRAIN report " +
          dir.file("run") + " --out " + dir.file("report.html"),
      dir);
  INFO(run.output << read_text(dir.file("train.log")));
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("written to " + dir.file("report.html")) != std::string::npos);
  const std::string html = read_text(dir.file("report.html"));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("rank 1 (host ") != std::string::npos);  // provenance and the per-rank bars
  CHECK(html.find("% at epoch ") != std::string::npos);  // the top-1 tile names the epoch kept in best/
  CHECK(html.find(", its checkpoint in best/") != std::string::npos);
  CHECK(html.find("<h2>Per class (cvtrain eval)</h2>") != std::string::npos);  // the eval.json written into the run folder
  CHECK(html.find("<h3>Lowest top-1 (10 of 10 classes)</h3>") != std::string::npos);

  const std::map<std::string, ChartLayout> charts = browser_layout(dir, html);
  check_drawn(charts, {"loss", "accuracy", "throughput", "lr", "breakdown", "rank_spread", "rank_bars", "memory"});
  CHECK(charts.at("breakdown").marks == 7);  // every phase a layer
  CHECK(charts.at("rank_bars").marks >= 2 * 4);  // two ranks, at least four phases with time each

  const cvtrain::Image image = screenshot(dir, dir.file("report.html"), 1280, 1800, "report-screenshot.png");
  CHECK(image.width == 1280);
  CHECK(image.height == 1800);
  const int64_t pixels = static_cast<int64_t>(image.width) * image.height;
  // The breakdown's backward and forward layers are areas: thousands of pixels in their colours;
  // the train-loss line and the verdict's border are there too. A blank or unstyled page has none.
  CHECK(pixels_near(image, 0x72, 0xb7, 0xb2) > 3000);  // backward
  CHECK(pixels_near(image, 0x4c, 0x78, 0xa8) > 3000);  // forward, train loss, top-1
  CHECK(pixels_near(image, 0xf4, 0xf5, 0xf7) < pixels * 0.6);  // the page's background leaves room for the cards
}

TEST_CASE("cvtrain report names a folder that is no run and exits 1", "[e2e]") {
  TempDir dir;
  dir.write("notarun/recipe.yaml", "model: {}\n");
  const cvtrain::testing::Run run = shell("$CVTRAIN report " + dir.file("nowhere") + "; echo \"exit $?\"\n$CVTRAIN report " +
                                              dir.file("notarun") + "; echo \"exit $?\"",
                                          dir);
  CHECK(run.output.find(dir.file("nowhere") + ": no such run folder") != std::string::npos);
  CHECK(run.output.find("not a run folder (no metrics.jsonl") != std::string::npos);
  CHECK(run.output.find("exit 1\n") != std::string::npos);
  CHECK(run.output.find("exit 0") == std::string::npos);
}

TEST_CASE("cvtrain report SWEEP: a sweep from a recipe's sweep section renders in headless Chromium with every chart drawn",
          "[e2e][ranks][browser]") {
  TempDir dir;
  const std::string recipe = dir.write("recipe.yaml", "base: " + cvtrain::testing::kQuickstart +
                                                          "\n"
                                                          "sweep:\n"
                                                          "  space:\n"
                                                          "    optim.lr: {loguniform: [1.0e-3, 0.3]}\n"
                                                          "    augment.label_smoothing: [0.0, 0.1]\n"
                                                          "  trials: 4\n"
                                                          "  parallel: 2\n"
                                                          "  seed: 3\n"
                                                          "  early_stopping: {grace: 1, reduction: 2}\n");
  const cvtrain::testing::Run run =
      shell("$CVTRAIN sweep --recipe " + recipe + " --out " + dir.file("sweep") +
                " data.max_samples=256 data.max_val_samples=200 train.global_batch=64 train.epochs=2 data.workers=1 > " +
                dir.file("sweep.log") + " 2>&1 || exit 9\n"
                "$CVTRAIN report " + dir.file("sweep") + " && $CVTRAIN check --no-paths --recipe " + dir.file("sweep/best_recipe.yaml"),
            dir);
  INFO(run.output << read_text(dir.file("sweep.log")));
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("report of sweep " + dir.file("sweep") + " (4 trials, best trial-") != std::string::npos);
  CHECK(run.output.find("output: " + dir.file("sweep/best")) != std::string::npos);  // best_recipe.yaml trains on its own
  const std::string html = read_text(dir.file("sweep/report.html"));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);

  const std::map<std::string, ChartLayout> charts = browser_layout(dir, html);
  check_drawn(charts, {"curves", "key_optim_lr", "key_augment_label_smoothing"});
  CHECK(charts.at("curves").marks == 4);  // every trial reached its first rung

  const cvtrain::Image image = screenshot(dir, dir.file("sweep/report.html"), 1280, 1400, "sweep-report-screenshot.png");
  // The best trial in red: its curve, its legend swatch and its point in each key's chart.
  CHECK(pixels_near(image, 0xe4, 0x57, 0x56) > 400);
  if (read_text(dir.file("sweep/sweep.jsonl")).find("stopped early") != std::string::npos)
    CHECK(pixels_near(image, 0x9d, 0x9d, 0x9d) > 100);  // the stopped-early trials' dashed curves and points
}
