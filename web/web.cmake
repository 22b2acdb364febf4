# The web page's files, embedded in benchd at build time (cmake/EmbedFiles.cmake): every
# web/*.html, *.js and *.css, and uPlot from web/node_modules (npm ci --prefix web, which
# deploy/install-deps.sh runs; versions pinned in web/package-lock.json). Sets
# BENCH_WEB_ASSETS_CC, the generated source to add to bench_server.
include(${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake)

set(_web ${PROJECT_SOURCE_DIR}/web)
set(_uplot ${_web}/node_modules/uplot/dist)
foreach(_file uPlot.iife.min.js uPlot.min.css)
  if(NOT EXISTS ${_uplot}/${_file})
    message(FATAL_ERROR
      "web/node_modules/uplot is missing (${_uplot}/${_file} not found): benchd embeds uPlot "
      "from there. Run `npm ci --prefix web` (deploy/install-deps.sh does), then configure again.")
  endif()
endforeach()

file(GLOB _web_files CONFIGURE_DEPENDS ${_web}/*.html ${_web}/*.js ${_web}/*.css)
list(SORT _web_files)
set(_entries "")
foreach(_file IN LISTS _web_files)
  get_filename_component(_name ${_file} NAME)
  list(APPEND _entries "/${_name}=${_file}")
endforeach()
list(APPEND _entries
  "/vendor/uPlot.iife.min.js=${_uplot}/uPlot.iife.min.js"
  "/vendor/uPlot.min.css=${_uplot}/uPlot.min.css")

set(BENCH_WEB_ASSETS_CC ${CMAKE_CURRENT_BINARY_DIR}/web_assets.cc)
bench_embed_files(OUTPUT ${BENCH_WEB_ASSETS_CC} INCLUDE server/http/web_page.h FILES ${_entries})
