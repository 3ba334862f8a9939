# The findings report in a real browser: report.html opens in headless Chromium, every figure it holds
# (each <img>, and each SVG offered as a data-URI link) decodes, and a screenshot of the page is not blank
# (figure colours on it). Run by CTest (tests/CMakeLists.txt) as
#   cmake -DDEMO=<darkbert_report_demo> -DPNG_STATS=<darkbert_png_stats> -DOUT=<scratch folder> -P tests/report_html.cmake
# or with -DREPORT=<folder> instead of -DDEMO, on a report written before (darkbert reproduce --quick).
# Chromium is Debian's package `chromium` (.ci/install-deps installs it): without it this test fails, it
# does not skip. It runs as the machine notes ask (root, so --no-sandbox; no network traffic of its own;
# a new empty profile per run).
string(TIMESTAMP started "%s")
find_program(CHROMIUM NAMES chromium chromium-browser)
if(NOT CHROMIUM)
  message(FATAL_ERROR "report_html: chromium is not installed; install Debian's package 'chromium' "
                      "(apt-get install -y chromium; .ci/install-deps does)")
endif()
execute_process(COMMAND "${CHROMIUM}" --version OUTPUT_VARIABLE chromium_version ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(report "${OUT}/report")

if(DEFINED REPORT)  # a report folder written before (e.g. by darkbert reproduce --quick)
  set(report "${REPORT}")
else()
  execute_process(COMMAND "${DEMO}" --out "${report}" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "darkbert_report_demo failed (exit ${rc}):\n${log}${err}")
  endif()
endif()

# How many figure files the report names (summary.json "files"): each is shown as an <img> or offered as
# a data-URI link, so the page must hold exactly that many images.
file(READ "${report}/summary.json" summary)
string(JSON file_count LENGTH "${summary}" files)
set(figure_files 0)
math(EXPR last "${file_count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${summary}" files ${i})
  if(name MATCHES "\\.(png|svg)$")
    math(EXPR figure_files "${figure_files} + 1")
  endif()
endforeach()

set(chromium_flags --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
    --disable-component-update --disable-sync --hide-scrollbars)

# 1. The page with a probe script appended (the report itself has no script). While the page is parsed it
#    adds a hidden <img> for every figure offered as a data-URI link (the SVGs), so that the load event
#    waits for those too; once loaded, it draws every image onto a canvas (a synchronous decode) and writes
#    into the DOM how many failed, which --dump-dom prints. darkbert's figures paint a white background,
#    so a transparent pixel means that part of the image did not decode (Chromium draws a PNG with a
#    corrupt stream down to the damage). (Promises such as img.decode() may still be pending when
#    --dump-dom prints, so the check is synchronous.)
file(READ "${report}/report.html" page)
set(probe_script [=[<script>
const linked = Array.from(document.querySelectorAll('a[href^="data:image/"]')).map((a) => {
  const img = document.createElement('img');
  img.src = a.href;
  img.style.display = 'none';
  document.body.appendChild(img);
  return img;
});
window.addEventListener('load', () => {
  const drawn = (img) => {
    if (!img.complete || img.naturalWidth === 0 || img.naturalHeight === 0) return false;
    try {
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const context = canvas.getContext('2d');
      context.drawImage(img, 0, 0);
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i] === 0) return false;
      return true;
    } catch (e) {
      return false;
    }
  };
  const shown = Array.from(document.images).filter((img) => !linked.includes(img));
  const out = document.createElement('pre');
  out.id = 'figure-check';
  out.textContent = 'images=' + shown.length + ' failed=' + shown.filter((img) => !drawn(img)).length +
                    ' linked=' + linked.length + ' linked_failed=' + linked.filter((img) => !drawn(img)).length;
  document.body.appendChild(out);
});
</script>]=])
string(REPLACE "</body>" "${probe_script}</body>" probe "${page}")
file(WRITE "${OUT}/probe.html" "${probe}")
execute_process(COMMAND "${CHROMIUM}" ${chromium_flags} "--user-data-dir=${OUT}/profile-dom"
                        --dump-dom "file://${OUT}/probe.html"
                RESULT_VARIABLE rc OUTPUT_VARIABLE dom ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "chromium --dump-dom failed (exit ${rc}):\n${err}")
endif()
if(NOT dom MATCHES "<pre id=\"figure-check\">images=([0-9]+) failed=([0-9]+) linked=([0-9]+) linked_failed=([0-9]+)</pre>")
  string(SUBSTRING "${dom}" 0 2000 head)
  message(FATAL_ERROR "the probe script did not report (page did not load?):\n${head}\n${err}")
endif()
set(images ${CMAKE_MATCH_1})
set(failed ${CMAKE_MATCH_2})
set(linked ${CMAKE_MATCH_3})
set(linked_failed ${CMAKE_MATCH_4})
math(EXPR shown "${images} + ${linked}")
if(NOT failed EQUAL 0 OR NOT linked_failed EQUAL 0 OR NOT shown EQUAL figure_files OR images EQUAL 0)
  message(FATAL_ERROR "report.html in ${chromium_version}: ${images} images (${failed} failed to decode), ${linked} "
                      "figure links (${linked_failed} failed to decode); the report names ${figure_files} figure files")
endif()

# 2. A screenshot of the report itself: a decodable PNG of the window's size, not blank, with the figures'
#    colours on it (text, rules and badges are nearly grey; viridis and the curve are not).
execute_process(COMMAND "${CHROMIUM}" ${chromium_flags} "--user-data-dir=${OUT}/profile-shot" --window-size=1280,2400
                        "--screenshot=${OUT}/screenshot.png" "file://${report}/report.html"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUT}/screenshot.png")
  message(FATAL_ERROR "chromium --screenshot failed (exit ${rc}):\n${log}${err}")
endif()
execute_process(COMMAND "${PNG_STATS}" "${OUT}/screenshot.png" RESULT_VARIABLE rc OUTPUT_VARIABLE stats ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT stats MATCHES "width=([0-9]+) height=([0-9]+) distinct=([0-9]+) colourful=([0-9]+)")
  message(FATAL_ERROR "the screenshot does not decode: ${stats}${err}")
endif()
if(NOT CMAKE_MATCH_1 EQUAL 1280 OR NOT CMAKE_MATCH_2 EQUAL 2400 OR CMAKE_MATCH_3 LESS 64 OR CMAKE_MATCH_4 LESS 5000)
  message(FATAL_ERROR "the screenshot looks blank or cut (want 1280 x 2400, >= 64 colours, >= 5000 colourful "
                      "pixels): ${stats}")
endif()
string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
message(STATUS "${chromium_version}: ${images} images and ${linked} SVG links decoded; screenshot ${stats}; ${seconds} s")
