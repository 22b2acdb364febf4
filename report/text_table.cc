#include "report/text_table.h"

#include <algorithm>

#include "absl/strings/str_replace.h"

namespace bench::report {
namespace {

Align AlignOf(const TextTable& table, size_t column) {
  return column < table.align.size() ? table.align[column] : Align::kLeft;
}

// Width on screen: UTF-8 continuation bytes take no column ("–" is one column).
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string Pad(const std::string& text, size_t width, Align align) {
  const size_t size = DisplayWidth(text);
  if (size >= width) return text;
  std::string fill(width - size, ' ');
  return align == Align::kRight ? fill + text : text + fill;
}

std::vector<std::vector<std::string>> AllRows(const TextTable& table, bool escape) {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(table.rows.size() + 1);
  rows.push_back(table.header);
  for (const auto& row : table.rows) rows.push_back(row);
  size_t columns = 0;
  for (const auto& row : rows) columns = std::max(columns, row.size());
  for (auto& row : rows) {
    row.resize(columns);
    if (escape) {
      for (auto& cell : row) cell = absl::StrReplaceAll(cell, {{"|", "\\|"}});
    }
  }
  return rows;
}

std::vector<size_t> Widths(const std::vector<std::vector<std::string>>& rows, size_t minimum) {
  std::vector<size_t> widths(rows.empty() ? 0 : rows[0].size(), minimum);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  return widths;
}

}  // namespace

std::string RenderPlainTable(const TextTable& table) {
  const auto rows = AllRows(table, /*escape=*/false);
  const auto widths = Widths(rows, 0);
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      line += Pad(row[c], widths[c], AlignOf(table, c));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line;
    out += '\n';
  }
  return out;
}

std::string RenderMarkdownTable(const TextTable& table) {
  const auto rows = AllRows(table, /*escape=*/true);
  const auto widths = Widths(rows, 3);
  auto render_row = [&](const std::vector<std::string>& row) {
    std::string line = "|";
    for (size_t c = 0; c < row.size(); ++c) {
      line += ' ';
      line += Pad(row[c], widths[c], AlignOf(table, c));
      line += " |";
    }
    return line + "\n";
  };
  std::string out = render_row(rows[0]);
  out += "|";
  for (size_t c = 0; c < widths.size(); ++c) {
    if (AlignOf(table, c) == Align::kRight) {
      out += std::string(widths[c] + 1, '-') + ":|";
    } else {
      out += ":" + std::string(widths[c] + 1, '-') + "|";
    }
  }
  out += '\n';
  for (size_t r = 1; r < rows.size(); ++r) out += render_row(rows[r]);
  return out;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace bench::report
