// Rendering of small tables as aligned plain text or GitHub markdown. Pure functions.
#pragma once

#include <string>
#include <vector>

namespace bench::report {

enum class Align { kLeft, kRight };

struct TextTable {
  std::vector<std::string> header;
  std::vector<Align> align;  // one per column; missing entries mean kLeft
  std::vector<std::vector<std::string>> rows;  // rows shorter than header are padded
};

// Widths count UTF-8 characters, not bytes ("1400.1–1420.3" is 13 columns wide).
// Columns separated by two spaces, padded to the widest cell, no trailing spaces;
// one line per row, header first, each ending in '\n'.
std::string RenderPlainTable(const TextTable& table);

// One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote
// or a line break; as it is otherwise.
std::string CsvField(const std::string& text);

// A GitHub table: "| a | b |", then "|:--|--:|" style alignment, then the rows; cells
// padded to line up; '|' inside a cell is escaped.
std::string RenderMarkdownTable(const TextTable& table);

}  // namespace bench::report
