# The dashboard in a real browser (tests/browser/README.md): `npm ci` of the pinned
# playwright-core (a fixture), then Debian's headless Chromium against a real `arbiter serve`
# (dashboard.test.js). Node.js, npm and Chromium come from scripts/setup.sh --with-browser; a
# missing one is a failed test, never a skip. Screenshots go to the build directory here
# (docs/screenshots/ holds the ones shown in docs/dashboard.md: run the script by hand).
add_test(NAME browser.npm_ci COMMAND npm ci --no-audit --no-fund
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/browser)
set_tests_properties(browser.npm_ci PROPERTIES FIXTURES_SETUP browser_deps TIMEOUT 300)
add_test(NAME browser.dashboard COMMAND node dashboard.test.js
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/browser)
set_tests_properties(browser.dashboard PROPERTIES
  FIXTURES_REQUIRED browser_deps TIMEOUT 300 RESOURCE_LOCK chromium
  ENVIRONMENT "ARBITER_BINARY=$<TARGET_FILE:arbiter>;ARBITER_SCREENSHOTS=${CMAKE_BINARY_DIR}/screenshots")
