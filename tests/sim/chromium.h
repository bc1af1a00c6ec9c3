// Rendering the HTML reports in the real headless Chromium (Debian package `chromium`) and
// measuring them there: a script appended to a copy of the page measures every SVG text's box
// against its SVG's viewBox, every SVG's rendered width, and whether table cells that must stay
// on one line (td.w) wrapped; Chromium's --dump-dom hands the result back.
//
// Without Chromium the tests skip, unless ARBITER_REQUIRE_CHROMIUM is set (scripts/test.sh sets
// it: CI installs Chromium, so a missing browser there is a failure, not a skip).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace arbiter::testing {

inline std::string FindChromiumBinary() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (std::filesystem::exists(c)) return c;
  return "";
}

#define ARBITER_NEED_CHROMIUM(var)                                      \
  const std::string var = ::arbiter::testing::FindChromiumBinary();     \
  if (var.empty()) {                                                    \
    if (std::getenv("ARBITER_REQUIRE_CHROMIUM"))                        \
      FAIL() << "no chromium installed (Debian: chromium)";             \
    GTEST_SKIP() << "no chromium installed (Debian package: chromium)"; \
  }

inline const char* kMeasureScript = R"js(
<script>
(function () {
  const out = {svgs: [], clipped: [], wrapped: [], cells: 0};
  document.querySelectorAll('svg').forEach(function (svg) {
    const vb = svg.viewBox.baseVal;
    const first = svg.querySelector('text');
    const title = first ? first.textContent : '';
    out.svgs.push({title: title, width: svg.getBoundingClientRect().width, viewBoxWidth: vb.width});
    svg.querySelectorAll('text').forEach(function (t) {
      if (t.getAttribute('transform')) return;  // rotated axis titles: their box is before rotation
      const b = t.getBBox();
      if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > vb.width + 0.5 || b.y + b.height > vb.height + 0.5)
        out.clipped.push({chart: title, text: t.textContent, x: b.x, right: b.x + b.width, viewBoxWidth: vb.width});
    });
  });
  document.querySelectorAll('td.w').forEach(function (td) {
    out.cells++;
    const range = document.createRange();
    range.selectNodeContents(td);
    const tops = new Set();
    Array.from(range.getClientRects()).forEach(function (r) { tops.add(Math.round(r.top)); });
    if (tops.size > 1) out.wrapped.push(td.textContent);
  });
  const pre = document.createElement('pre');
  pre.id = 'arbiter-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
)js";

// Renders `html` at `width`×1200 px and returns the measurements (null when Chromium failed).
inline nlohmann::json MeasureInChromium(const std::string& chromium,
                                        const std::filesystem::path& dir, const std::string& html,
                                        int width, const std::string& name) {
  std::filesystem::create_directories(dir);
  std::string page = html;
  const size_t body = page.rfind("</body>");
  page.insert(body == std::string::npos ? page.size() : body, kMeasureScript);
  const auto file = dir / (name + ".html"), dom = dir / (name + ".dom");
  const auto profile = dir / ("profile-" + name);
  std::filesystem::create_directories(profile);
  std::ofstream(file) << page;
  const std::string cmd =
      "timeout 180 " + chromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --hide-scrollbars --user-data-dir=" +
      profile.string() + " --window-size=" + std::to_string(width) + ",1200 --dump-dom file://" +
      file.string() + " > " + dom.string() + " 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) return nullptr;
  std::ifstream in(dom);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string open = "<pre id=\"arbiter-measure\">";
  const size_t a = text.find(open);
  if (a == std::string::npos) return nullptr;
  const size_t b = text.find("</pre>", a);
  std::string j = text.substr(a + open.size(), b - a - open.size());
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&lt;", "<"},
                                 {"&gt;", ">"},
                                 {"&quot;", "\""},
                                 {"&nbsp;", " "},
                                 {"&amp;", "&"}})
    for (size_t at = j.find(from); at != std::string::npos; at = j.find(from, at + to.size()))
      j.replace(at, from.size(), to);
  return nlohmann::json::parse(j, nullptr, false);
}

// The checks every report page must pass: no SVG text outside its SVG, charts that use the
// window (at least `min_chart_px` wide when the window allows), no td.w cell wrapped.
inline void ExpectRendersCleanly(const nlohmann::json& m, double min_chart_px,
                                 const std::string& what) {
  ASSERT_TRUE(m.is_object()) << what << ": Chromium did not render the page";
  EXPECT_FALSE(m["svgs"].empty()) << what;
  for (const auto& c : m["clipped"])
    ADD_FAILURE() << what << ": text clipped at the SVG's edge: " << c.dump();
  for (const auto& s : m["svgs"])
    EXPECT_GE(s["width"].get<double>(), min_chart_px)
        << what << ": chart \"" << s["title"].get<std::string>() << "\" is only " << s["width"]
        << " px wide";
  for (const auto& w : m["wrapped"])
    ADD_FAILURE() << what << ": a cell that must stay on one line wrapped: " << w;
}

}  // namespace arbiter::testing
