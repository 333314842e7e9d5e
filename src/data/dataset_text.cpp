// Text sources: text_line (lines of files) and csv (RFC 4180 records with typed columns).
// Both read files in chunks, in one pass (linear in the file whatever its shape: a huge line,
// an unterminated quote, many columns), with bounds that turn hostile files into errors.
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "data/dataset_internal.h"
#include "eagerflow/core/string_tensor.h"
#include "core/errno_kind.h"

namespace ef::data {
using detail::fail_data;
using detail::Flat;

namespace {

// A buffered byte reader over one file.
class ByteReader {
 public:
  explicit ByteReader(const std::string& path, const char* what) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      if (std::filesystem::exists(path, ec))
        fail_data(ErrorCode::failed_precondition, std::string(what) + ": " + path + " is not a regular file");
      fail_data(kFileNotFound, std::string(what) + ": " + path + " does not exist");
    }
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) {
      const int e = errno;
      fail_data(ef::detail::errno_kind(e), std::string(what) + ": cannot open " + path + ": " + std::strerror(e));
    }
  }
  ~ByteReader() {
    if (f_) std::fclose(f_);
  }
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;
  // The next byte, or -1 at the end.
  int get() {
    if (pos_ == len_) {
      len_ = std::fread(buf_, 1, sizeof buf_, f_);
      pos_ = 0;
      if (len_ == 0) return -1;
    }
    return static_cast<unsigned char>(buf_[pos_++]);
  }
  int peek() {
    int c = get();
    if (c >= 0) --pos_;
    return c;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  char buf_[1 << 16];
  std::size_t pos_ = 0, len_ = 0;
};

void check_files(const char* what, const std::vector<std::string>& files) {
  for (const auto& f : files) {
    std::error_code ec;
    if (!std::filesystem::exists(f, ec)) fail_data(kFileNotFound, std::string(what) + ": " + f + " does not exist");
    if (!std::filesystem::is_regular_file(f, ec))
      fail_data(ErrorCode::failed_precondition, std::string(what) + ": " + f + " is not a regular file");
  }
}

// ---------------------------------------------------------------- text_line
struct TextLineNode final : detail::Node {
  std::vector<std::string> files;
  TextLineOptions options;
  TextLineNode(std::vector<std::string> f, TextLineOptions o)
      : Node(ElementSpec{Structure::tensor, {}, {TensorSpec{DType::string, Shape{}, {}}}}), files(std::move(f)), options(o) {}
  std::int64_t cardinality() const override { return files.empty() ? 0 : kUnknownCardinality; }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const TextLineNode* node;
      std::size_t file = 0;
      std::unique_ptr<ByteReader> r;
      std::string line;
      std::int64_t line_number = 0;  // of the line being read, from 1
      bool next(Flat& out) override {
        // One byte more than the bound: a "\r\n" line exactly at it still fits.
        const std::size_t limit = node->options.max_line_bytes + 1;
        for (;;) {
          if (!r) {
            if (file >= node->files.size()) return false;
            r = std::make_unique<ByteReader>(node->files[file++], "text_line");
            line_number = 0;
          }
          line.clear();
          int c = r->get();
          if (c < 0) {
            r.reset();
            continue;
          }
          ++line_number;
          while (c >= 0 && c != '\n') {
            if (line.size() == limit) too_long();
            line.push_back(static_cast<char>(c));
            c = r->get();
          }
          if (line.size() == limit && line.back() != '\r') too_long();
          if (!line.empty() && line.back() == '\r') line.pop_back();
          out.clear();
          out.push_back(ef::string_scalar(line));
          return true;
        }
      }
      [[noreturn]] void too_long() const {
        fail_data("text_line: " + r->path() + ": line " + std::to_string(line_number) + " is longer than max_line_bytes (" +
                  std::to_string(node->options.max_line_bytes) + " bytes); raise the bound to read it");
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    return it;
  }
};

// ---------------------------------------------------------------- csv
class CsvReader {
 public:
  CsvReader(const std::string& path, const CsvOptions& o) : r_(path, "csv"), o_(o) {}
  // The next record's fields; false at the end of the file. `line` is the record's first line.
  bool read(std::vector<std::string>& fields, std::int64_t& line) {
    for (;;) {
      fields.clear();
      line = line_;
      int c = r_.peek();
      if (c < 0) return false;
      if (c == '\n' || c == '\r') {  // a blank line: skipped
        r_.get();
        if (c == '\r' && r_.peek() == '\n') r_.get();
        ++line_;
        continue;
      }
      std::size_t bytes = 0;
      std::string field;
      for (;;) {
        field.clear();
        c = r_.get();
        if (c == '"') {
          for (;;) {
            c = r_.get();
            if (c < 0) error(line, "unterminated quoted field (the file ends inside quotes)");
            if (c == '\n') ++line_;
            if (c == '"') {
              if (r_.peek() == '"') {
                r_.get();
              } else {
                break;
              }
            }
            if (++bytes > o_.max_record_bytes) too_long(line);
            field.push_back(static_cast<char>(c));
          }
          c = r_.get();
          if (c == '\r' && r_.peek() == '\n') c = r_.get();
          if (c >= 0 && c != o_.delimiter && c != '\n')
            error(line, "unexpected character '" + std::string(1, static_cast<char>(c)) + "' after a closing quote in field " +
                            std::to_string(fields.size() + 1));
        } else {
          while (c >= 0 && c != o_.delimiter && c != '\n') {
            if (++bytes > o_.max_record_bytes) too_long(line);
            field.push_back(static_cast<char>(c));
            c = r_.get();
          }
          if (c == '\n' && !field.empty() && field.back() == '\r') field.pop_back();
        }
        fields.push_back(field);
        if (fields.size() > o_.max_columns)
          error(line, "more than " + std::to_string(o_.max_columns) + " columns (CsvOptions::max_columns)");
        if (c != o_.delimiter) {
          if (c == '\n') ++line_;
          return true;
        }
      }
    }
  }
  [[noreturn]] void error(std::int64_t line, const std::string& what) const {
    fail_data("csv: " + r_.path() + ":" + std::to_string(line) + ": " + what);
  }

 private:
  [[noreturn]] void too_long(std::int64_t line) const {
    error(line, "record longer than " + std::to_string(o_.max_record_bytes) + " bytes (CsvOptions::max_record_bytes)");
  }
  ByteReader r_;
  const CsvOptions& o_;
  std::int64_t line_ = 1;
};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct CsvNode final : detail::Node {
  std::vector<std::string> files;
  CsvOptions options;
  std::vector<std::string> columns;  // file order
  std::vector<std::size_t> order;    // element component i <- column order[i]
  CsvNode(ElementSpec s, std::vector<std::string> f, CsvOptions o, std::vector<std::string> cols, std::vector<std::size_t> ord)
      : Node(std::move(s)), files(std::move(f)), options(std::move(o)), columns(std::move(cols)), order(std::move(ord)) {}
  std::int64_t cardinality() const override { return files.empty() ? 0 : kUnknownCardinality; }

  Tensor field(const CsvReader& r, std::int64_t line, std::size_t col, const std::string& text) const {
    std::string_view s = trimmed(text);
    DType d = options.column_types.empty() ? DType::float32 : options.column_types[col];
    auto name = [&] { return options.header ? "'" + columns[col] + "'" : std::to_string(col + 1); };
    if (s.empty()) {
      if (col < options.column_defaults.size() && options.column_defaults[col]) {
        double v = *options.column_defaults[col];
        switch (d) {
          case DType::float32: return scalar<float>(static_cast<float>(v));
          case DType::float64: return scalar<double>(v);
          case DType::int32: return scalar<std::int32_t>(static_cast<std::int32_t>(v));
          default: return scalar<std::int64_t>(static_cast<std::int64_t>(v));
        }
      }
      r.error(line, "column " + name() + " is empty and has no default (CsvOptions::column_defaults)");
    }
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (d == DType::float32 || d == DType::float64) {
      double v = 0;
      auto [p, ec] = std::from_chars(b, e, v);
      if (ec == std::errc::result_out_of_range) r.error(line, "column " + name() + ": '" + std::string(s) + "' is out of range");
      if (ec != std::errc() || p != e) r.error(line, "column " + name() + ": '" + std::string(s.substr(0, 64)) + "' is not a number");
      return d == DType::float32 ? scalar<float>(static_cast<float>(v)) : scalar<double>(v);
    }
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range || (d == DType::int32 && (v < INT32_MIN || v > INT32_MAX)))
      r.error(line, "column " + name() + ": '" + std::string(s) + "' is out of range for " + std::string(name_of(d)));
    if (ec != std::errc() || p != e)
      r.error(line, "column " + name() + ": '" + std::string(s.substr(0, 64)) + "' is not an integer");
    return d == DType::int32 ? scalar<std::int32_t>(static_cast<std::int32_t>(v)) : scalar<std::int64_t>(v);
  }

  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const CsvNode* node;
      std::size_t file = 0;
      std::unique_ptr<CsvReader> r;
      std::vector<std::string> fields;
      std::int64_t line = 0;
      bool next(Flat& out) override {
        for (;;) {
          if (!r) {
            if (file >= node->files.size()) return false;
            r = std::make_unique<CsvReader>(node->files[file++], node->options);
            if (node->options.header && !r->read(fields, line)) {
              r.reset();
              continue;
            }
          }
          if (!r->read(fields, line)) {
            r.reset();
            continue;
          }
          if (fields.size() != node->columns.size())
            r->error(line, "has " + std::to_string(fields.size()) + " fields, expected " + std::to_string(node->columns.size()));
          out.clear();
          for (std::size_t i : node->order) out.push_back(node->field(*r, line, i, fields[i]));
          return true;
        }
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    return it;
  }
};

}  // namespace

Dataset Dataset::text_line(std::vector<std::string> files, TextLineOptions options) {
  check_files("text_line", files);
  if (options.max_line_bytes < 1) fail_data("text_line: max_line_bytes must be positive");
  return Dataset(std::make_shared<TextLineNode>(std::move(files), options));
}

Dataset Dataset::csv(std::vector<std::string> files, CsvOptions options) {
  if (files.empty()) fail_data("csv needs at least one file");
  check_files("csv", files);
  if (options.delimiter == '"' || options.delimiter == '\n' || options.delimiter == '\r')
    fail_data("csv: the delimiter cannot be a quote or a line break");
  if (options.max_columns < 1 || options.max_record_bytes < 1) fail_data("csv: max_columns and max_record_bytes must be positive");
  for (DType d : options.column_types)
    if (d == DType::bool_) fail_data("csv: column types are float32, float64, int32 or int64 (got bool)");
  // The first record of the first file names (header) or counts the columns.
  std::vector<std::string> first;
  std::int64_t line = 0;
  {
    CsvReader r(files[0], options);
    if (!r.read(first, line)) {
      if (options.column_types.empty()) fail_data("csv: " + files[0] + " is empty (give column_types for empty files)");
      first.clear();
    }
  }
  std::vector<std::string> columns;
  std::size_t n = options.header ? first.size() : (options.column_types.empty() ? first.size() : options.column_types.size());
  if (options.header) {
    columns = first;
    std::set<std::string> seen;
    for (const auto& c : columns)
      if (!seen.insert(c).second) fail_data("csv: " + files[0] + ": the header names column '" + c + "' twice");
  } else {
    for (std::size_t i = 0; i < n; ++i) columns.push_back(std::to_string(i));
  }
  if (!options.column_types.empty() && options.column_types.size() != n)
    fail_data("csv: " + std::to_string(options.column_types.size()) + " column_types for " + std::to_string(n) + " columns in " + files[0]);
  if (!options.column_defaults.empty() && options.column_defaults.size() != n)
    fail_data("csv: " + std::to_string(options.column_defaults.size()) + " column_defaults for " + std::to_string(n) + " columns");
  ElementSpec spec;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  if (options.header) {
    spec.structure = Structure::map;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return columns[a] < columns[b]; });
    for (std::size_t i : order) spec.keys.push_back(columns[i]);
  } else {
    spec.structure = n == 1 ? Structure::tensor : Structure::tuple;
  }
  for (std::size_t i : order)
    spec.specs.push_back(TensorSpec{options.column_types.empty() ? DType::float32 : options.column_types[i], Shape{}, {}});
  return Dataset(std::make_shared<CsvNode>(std::move(spec), std::move(files), std::move(options), std::move(columns), std::move(order)));
}

}  // namespace ef::data
