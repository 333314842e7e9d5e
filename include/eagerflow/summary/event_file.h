#pragma once
// TensorBoard's event files, byte for byte: TFRecord framing and the Event messages.
//
// A record is: uint64 length (little endian), uint32 masked CRC-32C of those 8 bytes, the
// data, uint32 masked CRC-32C of the data. The CRC is CRC-32C (Castagnoli), masked as
// TensorFlow does: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ef::summary {

// CRC-32C of `data`, continuing from `crc` (0 to start). SSE4.2's crc32 instruction when the
// CPU has it, a table otherwise: the same numbers.
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0);
std::uint32_t crc32c_portable(std::string_view data, std::uint32_t crc = 0);  // the table only
std::uint32_t mask_crc(std::uint32_t crc);
std::uint32_t unmask_crc(std::uint32_t masked);

// One framed record (header + data + footer).
std::string frame_record(std::string_view data);

struct RecordFile {
  enum class Status {
    ok,         // every byte read
    truncated,  // the last record is incomplete (a crash mid-write): the records before it are kept
    corrupt,    // a length or data CRC does not match, or a length exceeds the file: reading stopped there
  };
  std::vector<std::string> records;
  Status status = Status::ok;
  std::string message;       // what was wrong and at which byte offset
  std::uint64_t offset = 0;  // where reading stopped
};

// Reads the records of a file. A length is only trusted after its CRC matched and when the
// rest of the file holds that many bytes, so a damaged or hostile file never makes it
// allocate more than the file's size. A file that cannot be opened is an ef::Error.
RecordFile read_record_file(const std::string& path);
RecordFile read_records(std::string_view bytes);

// An Event, decoded (the fields eagerflow writes).
struct SummaryValue {
  enum class Kind { simple_value, histogram, tensor, none };
  std::string tag;
  Kind kind = Kind::none;
  std::string plugin_name;
  float simple_value = 0;
  // histogram
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit, bucket;
  // tensor (text: one string)
  std::vector<std::string> string_val;
  std::vector<float> float_val;
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;  // "brain.Event:2" in a file's first event
  std::string graph_def;     // serialized GraphDef, when the event holds a graph
  std::vector<SummaryValue> values;
};

// Decodes one record; a record that is not an Event is an ef::Error.
Event parse_event(std::string_view record);

// A GraphDef, decoded (tests; tools).
struct GraphNode {
  std::string name, op, device;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, std::string>> attrs;  // name and a printed value
};
std::vector<GraphNode> parse_graph_def(std::string_view serialized);

// Every event of a file (stops at a damaged or incomplete record, as TensorBoard does).
std::vector<Event> read_events(const std::string& path);

}  // namespace ef::summary
