// ef::summary: TFRecord framing with CRC-32C, event files, scalar/histogram/text eagerly and
// inside ef::function, damaged files, and the traced graph as a GraphDef.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "eagerflow/summary/event_file.h"
#include "eagerflow/summary/summary.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace ef;
using ef::testing::expect_error;
using ef::testing::fresh_temp_dir;

namespace {

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void write_bytes(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

// (tag, step, value) of every scalar in a file.
std::vector<std::tuple<std::string, std::int64_t, float>> scalars_of(const std::string& path) {
  std::vector<std::tuple<std::string, std::int64_t, float>> out;
  for (const auto& e : summary::read_events(path))
    for (const auto& v : e.values)
      if (v.kind == summary::SummaryValue::Kind::simple_value) out.emplace_back(v.tag, e.step, v.simple_value);
  return out;
}

}  // namespace

TEST(Summary, Crc32cKnownVectors) {
  // RFC 3720 (iSCSI) appendix B.4 and the classic check value of "123456789".
  std::string zeros(32, '\0'), ones(32, '\xff'), inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[static_cast<std::size_t>(i)] = static_cast<char>(i);
  for (auto f : {&summary::crc32c, &summary::crc32c_portable}) {
    EXPECT_EQ(f("123456789", 0), 0xE3069283u);
    EXPECT_EQ(f(zeros, 0), 0x8A9136AAu);
    EXPECT_EQ(f(ones, 0), 0x62A8AB43u);
    EXPECT_EQ(f(inc, 0), 0x46DD794Eu);
    EXPECT_EQ(f("", 0), 0u);
  }
  // Both paths agree on every length and alignment, and continuing equals one pass.
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 131 + 7));
  for (std::size_t off = 0; off < 9; ++off)
    for (std::size_t len = 0; off + len <= data.size(); len += 13) {
      std::string_view s(data.data() + off, len);
      ASSERT_EQ(summary::crc32c(s), summary::crc32c_portable(s)) << off << " " << len;
      ASSERT_EQ(summary::crc32c(s.substr(len / 2), summary::crc32c(s.substr(0, len / 2))), summary::crc32c(s));
    }
  for (std::uint32_t c : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) EXPECT_EQ(summary::unmask_crc(summary::mask_crc(c)), c);
  EXPECT_NE(summary::mask_crc(0xE3069283u), 0xE3069283u);
}

TEST(Summary, RecordFraming) {
  std::string r = summary::frame_record("hello");
  ASSERT_EQ(r.size(), 5u + 16u);
  EXPECT_EQ(static_cast<unsigned char>(r[0]), 5);  // little-endian length
  for (int i = 1; i < 8; ++i) EXPECT_EQ(r[static_cast<std::size_t>(i)], 0);
  EXPECT_EQ(r.substr(12, 5), "hello");
  auto back = summary::read_records(r + summary::frame_record("") + summary::frame_record("abc"));
  EXPECT_EQ(back.status, summary::RecordFile::Status::ok);
  ASSERT_EQ(back.records.size(), 3u);
  EXPECT_EQ(back.records[0], "hello");
  EXPECT_EQ(back.records[1], "");
  EXPECT_EQ(back.records[2], "abc");
  EXPECT_EQ(summary::read_records("").records.size(), 0u);
}

TEST(Summary, EveryTruncationKeepsTheWholeRecordsBefore) {
  std::string a = summary::frame_record("first"), b = summary::frame_record("second record");
  std::string all = a + b;
  for (std::size_t cut = 0; cut <= all.size(); ++cut) {
    auto r = summary::read_records(std::string_view(all).substr(0, cut));
    std::size_t whole = cut >= all.size() ? 2 : cut >= a.size() ? 1 : 0;
    ASSERT_EQ(r.records.size(), whole) << "cut at " << cut;
    bool at_boundary = cut == 0 || cut == a.size() || cut == all.size();
    EXPECT_EQ(r.status, at_boundary ? summary::RecordFile::Status::ok : summary::RecordFile::Status::truncated) << cut;
  }
}

TEST(Summary, DamagedBytesAreFoundByTheCrcs) {
  std::string all = summary::frame_record("first") + summary::frame_record("second");
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::string bad = all;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    auto r = summary::read_records(bad);
    EXPECT_NE(r.status, summary::RecordFile::Status::ok) << "flipped byte " << i;
    EXPECT_FALSE(r.message.empty());
    // What is kept is exactly the records before the damaged one.
    std::size_t first_len = 5 + 16;
    EXPECT_EQ(r.records.size(), i < first_len ? 0u : 1u) << i;
  }
}

TEST(Summary, HostileLengthsAllocateNothing) {
  // A header whose length CRC is right but whose length is absurd: no allocation of that size,
  // a clear status instead.
  for (std::uint64_t len : {std::uint64_t{1} << 62, std::uint64_t{1} << 33, std::uint64_t{100}, ~std::uint64_t{0}}) {
    std::string h;
    for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
    std::uint32_t c = summary::mask_crc(summary::crc32c(h));
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((c >> (8 * i)) & 0xFF));
    h += "tiny";
    auto r = summary::read_records(h);
    EXPECT_EQ(r.records.size(), 0u);
    EXPECT_NE(r.status, summary::RecordFile::Status::ok);
    EXPECT_NE(r.message.find(std::to_string(len)), std::string::npos) << r.message;
  }
  // Garbage of every short size: never ok with records, never a crash.
  std::string garbage;
  for (int i = 0; i < 64; ++i) {
    garbage.push_back(static_cast<char>(i * 37 + 11));
    auto r = summary::read_records(garbage);
    EXPECT_TRUE(r.records.empty());
  }
  expect_error([] { summary::read_record_file("/nonexistent/dir/events.out.tfevents.1"); }, {"[summary]", "cannot open"});
  expect_error([] { summary::parse_event("\xff\xff\xff"); }, {"[summary]", "not an Event"});
}

TEST(Summary, WriterFileNameFirstEventAndScalars) {
  fs::path dir = fresh_temp_dir("summary_scalars") / "run";  // made by the writer
  std::string path;
  {
    auto w = summary::create_file_writer(dir.string());
    path = w.path();
    auto scope = w.as_default();
    EXPECT_TRUE(summary::scalar("loss", 0.5, 1));
    EXPECT_TRUE(summary::scalar("loss", scalar<float>(0.25f), std::int64_t{2}));
    EXPECT_TRUE(summary::scalar("acc", scalar<std::int32_t>(3), scalar<std::int64_t>(7)));
  }  // the scope ends; the last handle closes and flushes the file
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::regex name(std::string("events\\.out\\.tfevents\\.\\d{10}\\.") + std::regex_replace(host, std::regex("\\."), "\\.") + "\\." +
                  std::to_string(getpid()) + "\\.\\d+");
  EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(), name)) << path;
  ASSERT_EQ(event_files(dir).size(), 1u);
  auto events = summary::read_events(path);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.6e9);
  auto s = scalars_of(path);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], std::make_tuple(std::string("loss"), std::int64_t{1}, 0.5f));
  EXPECT_EQ(s[1], std::make_tuple(std::string("loss"), std::int64_t{2}, 0.25f));
  EXPECT_EQ(s[2], std::make_tuple(std::string("acc"), std::int64_t{7}, 3.0f));
  for (const auto& e : events)
    for (const auto& v : e.values) EXPECT_EQ(v.plugin_name, "");  // TF 1's form: TensorBoard migrates it
  // No default writer: nothing written, false, as tf.summary.
  EXPECT_FALSE(summary::default_writer().valid());
  EXPECT_FALSE(summary::scalar("loss", 1.0, 3));
}

TEST(Summary, TwoWritersInOneSecondGetTwoFiles) {
  fs::path dir = fresh_temp_dir("summary_two");
  auto a = summary::create_file_writer(dir.string()), b = summary::create_file_writer(dir.string());
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(event_files(dir).size(), 2u);
}

TEST(Summary, HistogramAndText) {
  fs::path dir = fresh_temp_dir("summary_histo");
  auto w = summary::create_file_writer(dir.string());
  {
    auto scope = w.as_default();
    // 0, 1, ..., 9 and a NaN (left out): 5 buckets of width 1.8 hold 2 values each.
    std::vector<float> v;
    for (int i = 0; i < 10; ++i) v.push_back(static_cast<float>(i));
    v.push_back(std::nanf(""));
    EXPECT_TRUE(summary::histogram("w", tensor(v), 4, 5));
    EXPECT_TRUE(summary::histogram("const", full(Shape{3}, 2.0), 4));
    EXPECT_TRUE(summary::histogram("empty", zeros(Shape{0}), 4));
    EXPECT_TRUE(summary::text("notes", "**first** call", 4));
    // The widest range there is: no overflow into infinities or NaN.
    EXPECT_TRUE(summary::histogram("wide", tensor(std::vector<double>{-1.7e308, 0.0, 1.7e308}), 4, 2));
    EXPECT_TRUE(summary::scalar("big_step", 1.0, scalar<std::int64_t>(std::numeric_limits<std::int64_t>::max())));
  }
  w.close();
  EXPECT_TRUE(w.closed());
  std::map<std::string, summary::SummaryValue> by_tag;
  for (const auto& e : summary::read_events(w.path()))
    for (const auto& v : e.values) {
      if (v.tag != "big_step") { EXPECT_EQ(e.step, 4); }
      by_tag[v.tag] = v;
    }
  const auto& h = by_tag.at("w");
  ASSERT_EQ(h.kind, summary::SummaryValue::Kind::histogram);
  EXPECT_EQ(h.min, 0);
  EXPECT_EQ(h.max, 9);
  EXPECT_EQ(h.num, 10);
  EXPECT_EQ(h.sum, 45);
  EXPECT_EQ(h.sum_squares, 285);
  ASSERT_EQ(h.bucket.size(), 5u);
  for (double c : h.bucket) EXPECT_EQ(c, 2);
  EXPECT_NEAR(h.bucket_limit[0], 1.8, 1e-12);
  EXPECT_EQ(h.bucket_limit.back(), 9);
  const auto& c = by_tag.at("const");
  EXPECT_EQ(c.bucket, std::vector<double>{3});
  EXPECT_EQ(by_tag.at("empty").num, 0);
  const auto& t = by_tag.at("notes");
  EXPECT_EQ(t.kind, summary::SummaryValue::Kind::tensor);
  EXPECT_EQ(t.plugin_name, "text");
  EXPECT_EQ(t.string_val, std::vector<std::string>{"**first** call"});
  const auto& wide = by_tag.at("wide");
  EXPECT_EQ(wide.bucket, (std::vector<double>{1, 2}));
  EXPECT_EQ(wide.bucket_limit, (std::vector<double>{0.0, 1.7e308}));
  for (const auto& e : summary::read_events(w.path()))
    for (const auto& v : e.values)
      if (v.tag == "big_step") { EXPECT_EQ(e.step, std::numeric_limits<std::int64_t>::max()); }
}

TEST(Summary, BadInputsAreErrors) {
  fs::path dir = fresh_temp_dir("summary_bad");
  auto w = summary::create_file_writer(dir.string());
  auto scope = w.as_default();
  expect_error([] { summary::scalar("x", tensor({1.0f, 2.0f}), 0); }, {"summary.scalar", "'x'", "one element", "float32[2]"});
  expect_error([] { summary::scalar("", 1.0, 0); }, {"summary.scalar", "name"});
  for (std::string bad : {std::string("\xff"), std::string("a\xc3"), std::string("\xc0\x80"), std::string("\xed\xa0\x80")})
    expect_error([&] { summary::scalar(bad, 1.0, 0); }, {"summary.scalar", "UTF-8"});
  EXPECT_TRUE(summary::scalar("ünïcode/λ/😀", 1.0, 0));
  expect_error([] { summary::scalar("x", Tensor(), 0); }, {"summary.scalar", "undefined"});
  expect_error([] { summary::scalar("x", 1.0, tensor({1.0f, 2.0f})); }, {"summary.scalar", "step", "float32[2]"});
  expect_error([] { summary::scalar("x", 1.0, scalar<bool>(true)); }, {"summary.scalar", "step", "bool"});
  expect_error([] { summary::scalar("x", 1.0, scalar<double>(std::nan(""))); }, {"summary.scalar", "not finite"});
  expect_error([] { summary::scalar("x", 1.0); }, {"summary.scalar", "no step", "set_step"});
  for (int b : {0, -3, 2000000}) expect_error([&] { summary::histogram("h", tensor({1.0f}), 0, b); }, {"summary.histogram", "buckets"});
  summary::set_step(11);
  EXPECT_TRUE(summary::scalar("x", 1.0));
  summary::set_step(std::nullopt);
  expect_error([] { summary::create_file_writer(""); }, {"[summary]", "log directory"});
  write_bytes(dir / "a_file", "x");
  expect_error([&] { summary::create_file_writer((dir / "a_file").string()); }, {"[summary]", "a_file"});
  expect_error([&] { summary::create_file_writer(dir.string(), {.max_queue = 0}); }, {"max_queue"});
  expect_error([&] { summary::create_file_writer(dir.string(), {.filename_suffix = "a/b"}); }, {"filename_suffix"});
  expect_error([] { summary::SummaryWriter().flush(); }, {"[summary]", "empty SummaryWriter"});
  w.close();
  expect_error([] { summary::scalar("x", 1.0, 0); }, {"summary.scalar", "closed"});
  auto back = scalars_of(w.path());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(std::get<0>(back[0]), "ünïcode/λ/😀");
  EXPECT_EQ(std::get<1>(back[1]), 11);
}

TEST(Summary, FlushesEveryMaxQueueRecordsAndOnFlush) {
  fs::path dir = fresh_temp_dir("summary_flush");
  auto w = summary::create_file_writer(dir.string(), {.max_queue = 3, .flush_secs = 3600});
  auto scope = w.as_default();
  auto count = [&] { return summary::read_record_file(w.path()).records.size(); };
  EXPECT_EQ(count(), 1u);  // the file_version event is on disk at once
  summary::scalar("a", 1.0, 1);
  summary::scalar("a", 2.0, 2);
  EXPECT_EQ(count(), 1u);
  summary::scalar("a", 3.0, 3);
  EXPECT_EQ(count(), 4u);
  summary::scalar("a", 4.0, 4);
  EXPECT_EQ(count(), 4u);
  w.flush();
  EXPECT_EQ(count(), 5u);
  // A record waits at most about flush_secs, even when nothing is written after it.
  auto wt = summary::create_file_writer(dir.string(), {.max_queue = 1000, .flush_secs = 0.2});
  {
    auto scope_t = wt.as_default();
    summary::scalar("c", 1.0, 1);
  }
  for (int i = 0; i < 50 && summary::read_record_file(wt.path()).records.size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(summary::read_record_file(wt.path()).records.size(), 2u);
  // flush_secs = 0: every record goes out as it is written.
  auto w0 = summary::create_file_writer(dir.string(), {.max_queue = 1000, .flush_secs = 0});
  auto scope0 = w0.as_default();
  summary::scalar("b", 1.0, 1);
  EXPECT_EQ(summary::read_record_file(w0.path()).records.size(), 2u);
}

TEST(Summary, WritesAtEveryExecutionOfATracedFunction) {
  fs::path dir = fresh_temp_dir("summary_traced");
  auto w = summary::create_file_writer(dir.string(), {.max_queue = 1});
  auto scope = w.as_default();
  int host_runs = 0;
  auto f = function([&](const Tensor& x, const Tensor& step) {
    ++host_runs;
    Tensor y = x * 2.0f;
    summary::scalar("y_sum", sum(y), step);
    summary::histogram("y", y, step, 4);
    summary::text("static_step_text", "traced", 100);
    return y;
  });
  for (int i = 0; i < 3; ++i) f(tensor({1.0f, 2.0f * static_cast<float>(i)}), scalar<std::int64_t>(i));
  EXPECT_EQ(host_runs, 1);
  EXPECT_EQ(f.tracing_count(), 1);
  // The op is in the graph (an effect: never pruned although nothing uses it).
  std::string g = f.concrete_functions()[0]->str();
  EXPECT_NE(g.find("summary.scalar"), std::string::npos) << g;
  EXPECT_NE(g.find("summary.histogram"), std::string::npos) << g;
  auto s = scalars_of(w.path());
  ASSERT_EQ(s.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(std::get<0>(s[static_cast<std::size_t>(i)]), "y_sum");
    EXPECT_EQ(std::get<1>(s[static_cast<std::size_t>(i)]), i);
    EXPECT_EQ(std::get<2>(s[static_cast<std::size_t>(i)]), 2.0f + 4.0f * static_cast<float>(i));
  }
  // In order: scalar, histogram, text at each execution.
  std::vector<std::string> order;
  for (const auto& e : summary::read_events(w.path()))
    for (const auto& v : e.values) order.push_back(v.tag);
  ASSERT_EQ(order.size(), 9u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(order[static_cast<std::size_t>(3 * i)], "y_sum");
    EXPECT_EQ(order[static_cast<std::size_t>(3 * i + 1)], "y");
    EXPECT_EQ(order[static_cast<std::size_t>(3 * i + 2)], "static_step_text");
  }
  // A non-scalar value with a static shape is an error at trace time, naming the tag.
  auto bad = function([](const Tensor& x) {
    summary::scalar("not_scalar", x, 0);
    return x;
  });
  expect_error([&] { bad(tensor({1.0f, 2.0f})); }, {"summary.scalar", "not_scalar", "float32[2]"});
}

TEST(Summary, GraphOfATracedFunction) {
  fs::path dir = fresh_temp_dir("summary_graph");
  auto f = function([](const Tensor& x, const Tensor& w) { return relu(matmul(x, w)) + 1.0f; });
  f(ones(Shape{2, 3}), ones(Shape{3, 4}));
  auto w = summary::create_file_writer(dir.string());
  w.write_graph(*f.concrete_functions()[0], 0);
  w.close();
  std::string graph;
  for (const auto& e : summary::read_events(w.path()))
    if (!e.graph_def.empty()) graph = e.graph_def;
  ASSERT_FALSE(graph.empty());
  auto nodes = summary::parse_graph_def(graph);
  std::map<std::string, summary::GraphNode> by_op;
  for (const auto& n : nodes) by_op[n.op] = n;
  ASSERT_TRUE(by_op.count("Placeholder"));
  ASSERT_TRUE(by_op.count("matmul")) << nodes.size();
  ASSERT_TRUE(by_op.count("Identity"));
  const auto& mm = by_op.at("matmul");
  ASSERT_EQ(mm.inputs.size(), 2u);
  EXPECT_EQ(mm.inputs[0].rfind("inputs/", 0), 0u) << mm.inputs[0];
  bool has_shape = false;
  for (const auto& [k, v] : mm.attrs)
    if (k == "_output_shapes") has_shape = v == "[2,4]";
  EXPECT_TRUE(has_shape);
  // Every input names a node of the graph.
  std::set<std::string> names;
  for (const auto& n : nodes) names.insert(n.name);
  for (const auto& n : nodes)
    for (std::string in : n.inputs) EXPECT_TRUE(names.count(in.substr(0, in.find(':')))) << in;
  expect_error([] { summary::parse_graph_def("\x0a\xff\xff\xff"); }, {"GraphDef"});
}

TEST(Summary, ASigkilledWriterLeavesAReadableFile) {
  fs::path dir = fresh_temp_dir("summary_kill");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Writes as fast as it can, one flush per record, until killed.
    try {
      auto w = summary::create_file_writer(dir.string(), {.max_queue = 1});
      auto scope = w.as_default();
      std::string pad(3000, 'x');
      for (std::int64_t i = 0;; ++i) {
        summary::scalar("v", static_cast<double>(i), i);
        summary::text("pad", pad, i);
      }
    } catch (...) {
    }
    _exit(3);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto files = event_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto r = summary::read_record_file(files[0].string());
  EXPECT_NE(r.status, summary::RecordFile::Status::corrupt) << r.message;
  ASSERT_GT(r.records.size(), 10u);
  // Every whole record parses, the scalars count up from 0 without a gap.
  std::int64_t next = 0;
  for (std::size_t i = 1; i < r.records.size(); ++i) {
    auto e = summary::parse_event(r.records[i]);
    ASSERT_EQ(e.values.size(), 1u);
    if (e.values[0].tag == "v") {
      EXPECT_EQ(e.step, next);
      EXPECT_EQ(e.values[0].simple_value, static_cast<float>(next));
      ++next;
    }
  }
  EXPECT_GT(next, 5);
}
