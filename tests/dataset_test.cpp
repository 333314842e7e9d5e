// ef::data::Dataset: sources, transformations (tf.data's semantics), the threaded pipeline
// (bounded, cancellable, errors with element indices, repeatable), and fit/evaluate/predict
// from a dataset.
#include <eagerflow/data/dataset.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

#include "data/dataset_internal.h"
#include "test_util.h"
#include "train/progress_bar.h"

namespace {

using ef::Tensor;
using ef::data::Dataset;
using ef::data::Element;
using ef::data::ElementSpec;
using ef::testing::expect_error;

std::vector<std::int64_t> ints(const Dataset& ds) {
  std::vector<std::int64_t> out;
  for (const Element& e : ds) out.push_back(ef::cast(e.values()[0], ef::DType::int64).item<std::int64_t>());
  return out;
}

// A generator of int64 scalars 0..n-1 (n < 0: forever) that counts what it has produced.
Dataset counting(std::int64_t n, std::shared_ptr<std::atomic<std::int64_t>> produced) {
  return Dataset::from_generator(
      [n, produced]() -> Dataset::Generator {
        auto i = std::make_shared<std::int64_t>(0);
        return [n, produced, i]() -> std::optional<Element> {
          if (n >= 0 && *i >= n) return std::nullopt;
          produced->fetch_add(1);
          return Element(ef::scalar<std::int64_t>((*i)++));
        };
      },
      ElementSpec{ef::data::Structure::tensor, {}, {ef::TensorSpec{ef::DType::int64, ef::Shape{}, {}}}});
}

TEST(Dataset, FromTensorSlicesTupleAndMap) {
  Tensor x = ef::reshape(ef::arange(12, ef::DType::int64), {4, 3});
  Tensor y = ef::tensor(std::vector<std::int64_t>{7, 8, 9, 10});
  Dataset ds = Dataset::from_tensor_slices({x, y});
  EXPECT_EQ(ds.cardinality(), 4);
  EXPECT_EQ(ds.element_spec().str(), "(int64[3], int64[])");
  std::int64_t i = 0;
  for (const Element& e : ds) {
    EXPECT_EQ(e[0].to_vector<std::int64_t>(), (std::vector<std::int64_t>{3 * i, 3 * i + 1, 3 * i + 2}));
    EXPECT_EQ(e[1].item<std::int64_t>(), 7 + i);
    ++i;
  }
  EXPECT_EQ(i, 4);
  Dataset m = Dataset::from_tensor_slices(std::map<std::string, Tensor>{{"b", y}, {"a", x}});
  EXPECT_EQ(m.element_spec().str(), "{a: int64[3], b: int64[]}");
  auto first = m.iterator().next();
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)["b"].item<std::int64_t>(), 7);
  expect_error([&] { (void)(*first)["c"]; }, {"no key 'c'", "a, b"});
  expect_error([&] { Dataset::from_tensor_slices({x, ef::tensor(std::vector<std::int64_t>{1})}); }, {"same first dimension"});
  expect_error([&] { Dataset::from_tensor_slices(Element(ef::scalar(1.0f))); }, {"scalar"});
}

TEST(Dataset, RangeAndCardinalityConstants) {
  EXPECT_EQ(ints(Dataset::range(2, 11, 3)), (std::vector<std::int64_t>{2, 5, 8}));
  EXPECT_EQ(ints(Dataset::range(5, 0, -2)), (std::vector<std::int64_t>{5, 3, 1}));
  EXPECT_EQ(Dataset::range(5, 0, -2).cardinality(), 3);
  EXPECT_EQ(Dataset::range(3, 3).cardinality(), 0);
  EXPECT_EQ(ef::data::kInfiniteCardinality, -1);
  EXPECT_EQ(ef::data::kUnknownCardinality, -2);
  Dataset r = Dataset::range(10);
  EXPECT_EQ(r.repeat().cardinality(), ef::data::kInfiniteCardinality);
  EXPECT_EQ(r.repeat(3).cardinality(), 30);
  EXPECT_EQ(r.repeat().take(7).cardinality(), 7);
  EXPECT_EQ(r.skip(4).cardinality(), 6);
  EXPECT_EQ(r.skip(40).cardinality(), 0);
  EXPECT_EQ(r.filter([](const Element& e) { return ef::less(e.tensor(), ef::scalar<std::int64_t>(3)); }).cardinality(),
            ef::data::kUnknownCardinality);
  EXPECT_EQ(r.batch(3).cardinality(), 4);
  EXPECT_EQ(r.batch(3, true).cardinality(), 3);
  EXPECT_EQ(Dataset::zip({r, r.take(4)}).cardinality(), 4);
  EXPECT_EQ(Dataset::zip({r.repeat(), r.repeat()}).cardinality(), ef::data::kInfiniteCardinality);
  EXPECT_EQ(ints(r.skip(7)), (std::vector<std::int64_t>{7, 8, 9}));
  EXPECT_EQ(ints(r.take(2)), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(ints(r.take(-1)).size(), 10u);
  EXPECT_EQ(ints(r.take(2).repeat(2)), (std::vector<std::int64_t>{0, 1, 0, 1}));
  EXPECT_TRUE(ints(r.take(0).repeat()).empty());  // an empty pass ends an endless repeat
  expect_error([] { Dataset::range(0, 5, 0); }, {"step"});
}

TEST(Dataset, BatchAndDropRemainder) {
  Dataset ds = Dataset::range(7).map([](const Element& e) {
    return Element({ef::stack({e.tensor(), e.tensor()}), ef::cast(e.tensor(), ef::DType::float32)});
  });
  auto b = ds.batch(3);
  EXPECT_EQ(b.element_spec().str(), "(int64[?,2], float32[?])");
  std::vector<std::int64_t> sizes;
  for (const Element& e : b) sizes.push_back(e[0].dim(0));
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{3, 3, 1}));
  auto d = ds.batch(3, true);
  EXPECT_EQ(d.element_spec().str(), "(int64[3,2], float32[3])");
  sizes.clear();
  for (const Element& e : d) sizes.push_back(e[1].dim(0));
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{3, 3}));
  // Rows from slices batch without a copy, with the same values.
  Tensor x = ef::reshape(ef::arange(10, ef::DType::int64), {5, 2});
  auto it = Dataset::from_tensor_slices(x).batch(2).iterator();
  EXPECT_EQ(it.next()->tensor().to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(it.next()->tensor().to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(it.next()->tensor().shape(), ef::Shape({1, 2}));
  EXPECT_FALSE(it.next());
  auto all = Dataset::range(4).batch(std::numeric_limits<std::int64_t>::max()).iterator().next();
  EXPECT_EQ(all->tensor().shape(), ef::Shape({4}));
  expect_error([] { Dataset::range(4).batch(0); }, {"batch_size", "at least 1"});
  // Elements of different shapes: an error naming the element, pointing to padded_batch.
  auto ragged = Dataset::range(1, 4).map([](const Element& e) { return Element(ef::ones_like(e.tensor())); });
  auto seqs = Dataset::from_generator(
      [] {
        auto i = std::make_shared<int>(0);
        return [i]() -> std::optional<Element> {
          if (*i >= 3) return std::nullopt;
          ++*i;
          return Element(ef::full({*i}, *i, ef::DType::int32));
        };
      },
      ElementSpec{ef::data::Structure::tensor, {}, {ef::TensorSpec{ef::DType::int32, ef::Shape{ef::kDynamic}, {}}}});
  expect_error([&] { ints(seqs.batch(3).map([](const Element& e) { return Element(ef::sum(e.tensor())); })); },
               {"element 1", "padded_batch"});
}

TEST(Dataset, PaddedBatchPadsToTheLongestOrTheGivenShape) {
  auto seqs = Dataset::from_generator(
      [] {
        auto i = std::make_shared<int>(0);
        return [i]() -> std::optional<Element> {
          if (*i >= 5) return std::nullopt;
          ++*i;
          return Element({ef::full({*i}, *i, ef::DType::int32), ef::scalar<std::int32_t>(*i)});
        };
      },
      ElementSpec{ef::data::Structure::tuple, {}, {ef::TensorSpec{ef::DType::int32, ef::Shape{ef::kDynamic}, {}},
                                                  ef::TensorSpec{ef::DType::int32, ef::Shape{}, {}}}});
  auto it = seqs.padded_batch(2, {}, {-1, 0}).iterator();
  auto b0 = it.next();
  EXPECT_EQ(b0->values()[0].shape(), ef::Shape({2, 2}));
  EXPECT_EQ(b0->values()[0].to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, -1, 2, 2}));
  auto b1 = it.next();
  EXPECT_EQ(b1->values()[0].to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 3, 3, -1, 4, 4, 4, 4}));
  EXPECT_EQ(it.next()->values()[0].shape(), ef::Shape({1, 5}));
  EXPECT_FALSE(it.next());
  auto fixed = seqs.padded_batch(5, {ef::Shape{6}, ef::Shape{}});
  EXPECT_EQ(fixed.element_spec().str(), "(int32[?,6], int32[?])");
  EXPECT_EQ(fixed.iterator().next()->values()[0].shape(), ef::Shape({5, 6}));
  expect_error([&] { ints(seqs.padded_batch(5, {ef::Shape{3}, ef::Shape{}}).map([](const Element& e) { return Element(e[1]); })); },
               {"padded_batch", "larger than the padded shape"});
  expect_error([&] { seqs.padded_batch(2, {ef::Shape{3}}); }, {"1 padded shapes", "2 components"});
  expect_error([&] { seqs.padded_batch(2, {ef::Shape{3, 3}, ef::Shape{}}); }, {"another rank"});
}

TEST(Dataset, ShuffleFollowsTfDataBufferSemantics) {
  Dataset r = Dataset::range(20);
  // A buffer of one keeps the order; a buffer of two draws the first output from {0, 1}.
  std::vector<std::int64_t> identity(20);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(ints(r.shuffle(1, 5)), identity);
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    auto v = ints(r.shuffle(2, seed));
    EXPECT_LE(v[0], 1);
    // Element k can come out no earlier than position k - 1 (it enters the buffer then).
    for (std::size_t p = 0; p < v.size(); ++p) EXPECT_LE(v[p], static_cast<std::int64_t>(p) + 1);
  }
  auto a = ints(r.shuffle(100, 42));
  EXPECT_NE(a, identity);
  EXPECT_EQ(std::set<std::int64_t>(a.begin(), a.end()).size(), 20u);
  // Seeded: repeatable across datasets; each pass reshuffles (repeatably) unless told not to.
  Dataset s1 = r.shuffle(100, 42), s2 = r.shuffle(100, 42);
  auto p1 = ints(s1), p2 = ints(s1), q1 = ints(s2), q2 = ints(s2);
  EXPECT_EQ(p1, q1);
  EXPECT_EQ(p2, q2);
  EXPECT_NE(p1, p2);
  Dataset fixed = r.shuffle(100, 42, false);
  EXPECT_EQ(ints(fixed), ints(fixed));
  // Unseeded: from ef's generator, so set_seed repeats it.
  ef::random::set_seed(3);
  auto u1 = ints(r.shuffle(100));
  ef::random::set_seed(3);
  EXPECT_EQ(ints(r.shuffle(100)), u1);
  expect_error([&] { r.shuffle(0); }, {"buffer_size"});
  EXPECT_EQ(ints(r.shuffle(std::numeric_limits<std::int64_t>::max(), 1)).size(), 20u);  // no huge reservation
}

TEST(Dataset, MapTracesOnceAndKeepsOrderOnThreads) {
  auto host_calls = std::make_shared<std::atomic<int>>(0);
  auto fn = [host_calls](const Element& e) {
    host_calls->fetch_add(1);  // host code: runs when tracing only
    return Element({ef::square(e.tensor()), e.tensor()});
  };
  Dataset ds = Dataset::range(200).map(fn, 2);
  EXPECT_EQ(ds.element_spec().str(), "(int64[], int64[])");
  std::int64_t i = 0;
  for (const Element& e : ds) {
    EXPECT_EQ(e[1].item<std::int64_t>(), i);
    EXPECT_EQ(e[0].item<std::int64_t>(), i * i);
    ++i;
  }
  EXPECT_EQ(i, 200);
  for (const Element& e : ds) (void)e;  // a second pass replays the same trace
  EXPECT_EQ(host_calls->load(), 1);
  // deterministic=false: the same elements, in any order.
  auto any = ints(Dataset::range(100).map([](const Element& e) { return Element(e.tensor() * ef::scalar<std::int64_t>(2)); },
                                          ef::data::kAutotune, false));
  std::multiset<std::int64_t> got(any.begin(), any.end()), want;
  for (std::int64_t k = 0; k < 100; ++k) want.insert(2 * k);
  EXPECT_EQ(got, want);
  // A function that reads a value cannot be traced: an error when the pipeline is built.
  expect_error([] { Dataset::range(3).map([](const Element& e) { return Element(ef::scalar<float>(e.tensor().item<std::int64_t>())); }); },
               {"map", "int64[]"});
  expect_error([] { Dataset::range(3).map([](const Element& e) { return e; }, -5); }, {"num_parallel_calls"});
}

ElementSpec int_vector_spec() {
  return ElementSpec{ef::data::Structure::tensor, {}, {ef::TensorSpec{ef::DType::int32, ef::Shape{ef::kDynamic}, {}}}};
}

// Element k is int32 [3] except element `bad`, which is [4].
Dataset with_bad_element(int n, int bad) {
  return Dataset::from_generator(
      [n, bad] {
        auto i = std::make_shared<int>(0);
        return [n, bad, i]() -> std::optional<Element> {
          if (*i >= n) return std::nullopt;
          int k = (*i)++;
          return Element(ef::full({k == bad ? 4 : 3}, k, ef::DType::int32));
        };
      },
      int_vector_spec());
}

TEST(Dataset, ErrorsInMapSurfaceWithTheElementIndex) {
  auto reshape3 = [](const Element& e) { return Element(ef::reshape(e.tensor(), {3, 1})); };
  for (std::int64_t threads : {0, 1, 3}) {
    Dataset ds = with_bad_element(20, 7).map(reshape3, threads);
    std::int64_t seen = 0;
    try {
      for (const Element& e : ds) {
        (void)e;
        ++seen;
      }
      ADD_FAILURE() << "expected an error";
    } catch (const ef::Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("map failed on element 7"), std::string::npos) << msg;
      EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;
    }
    EXPECT_EQ(seen, 7) << "threads " << threads;  // the elements before it arrive first, in order
  }
  // A generator that throws, or yields an element off its spec.
  auto throwing = Dataset::from_generator(
      [] {
        auto i = std::make_shared<int>(0);
        return [i]() -> std::optional<Element> {
          if (*i == 3) throw std::runtime_error("disk on fire");
          return Element(ef::full({2}, (*i)++, ef::DType::int32));
        };
      },
      int_vector_spec());
  expect_error([&] { ints(throwing.map([](const Element& e) { return Element(ef::sum(e.tensor())); }, 2)); },
               {"from_generator failed on element 3", "disk on fire"});
  auto wrong = Dataset::from_generator(
      [] { return []() -> std::optional<Element> { return Element(ef::scalar(1.0f)); }; }, int_vector_spec());
  expect_error([&] { wrong.iterator().next(); }, {"element 0", "float32[]", "int32[?]"});
}

TEST(Dataset, FilterZipEnumerate) {
  auto even = Dataset::range(10).filter([](const Element& e) {
    return ef::equal(e.tensor() - (e.tensor() / ef::scalar<std::int64_t>(2)) * ef::scalar<std::int64_t>(2), ef::scalar<std::int64_t>(0));
  });
  EXPECT_EQ(ints(even), (std::vector<std::int64_t>{0, 2, 4, 6, 8}));
  expect_error([] { Dataset::range(3).filter([](const Element& e) { return ef::stack({e.tensor(), e.tensor()}); }); }, {"scalar"});
  expect_error([] { Dataset::range(3).filter([](const Element& e) { return e.tensor() * ef::scalar<std::int64_t>(2); }); },
               {"bool scalar", "int64"});
  auto z = Dataset::zip({Dataset::range(3), Dataset::range(10, 20)});
  EXPECT_EQ(z.element_spec().str(), "(int64[], int64[])");
  std::vector<std::int64_t> second;
  for (const Element& e : z) second.push_back(e[1].item<std::int64_t>());
  EXPECT_EQ(second, (std::vector<std::int64_t>{10, 11, 12}));
  auto en = Dataset::range(5, 8).enumerate(100);
  std::vector<std::int64_t> idx;
  for (const Element& e : en) idx.push_back(e[0].item<std::int64_t>());
  EXPECT_EQ(idx, (std::vector<std::int64_t>{100, 101, 102}));
  EXPECT_EQ(en.cardinality(), 3);
}

TEST(Dataset, InterleaveMatchesTfDataOrder) {
  // tf.data's documented example (Dataset.interleave): range(1, 6), each x repeated 6 times,
  // cycle_length=2, block_length=4.
  auto ds = Dataset::range(1, 6).interleave(
      [](const Element& e) { return Dataset::from_tensors(e).repeat(6); }, 2, 4);
  EXPECT_EQ(ints(ds), (std::vector<std::int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}));
  expect_error([] { Dataset::range(3).interleave([](const Element& e) { return Dataset::from_tensors(e); }, 0); }, {"cycle_length"});
}

TEST(Dataset, CacheInMemoryAndInAFile) {
  auto produced = std::make_shared<std::atomic<std::int64_t>>(0);
  Dataset cached = counting(5, produced).cache();
  // A partial pass caches nothing.
  {
    auto it = cached.iterator();
    it.next();
  }
  EXPECT_EQ(ints(cached), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ints(cached), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(produced->load(), 6);  // 1 (partial) + 5; the last pass came from the cache
  auto dir = ef::testing::fresh_temp_dir("dataset_cache");
  std::string file = (dir / "c.bin").string();
  auto mapped = Dataset::range(4).map([](const Element& e) { return Element({ef::cast(e.tensor(), ef::DType::float32), e.tensor()}); });
  EXPECT_EQ(ints(mapped.cache(file)), (std::vector<std::int64_t>{0, 1, 2, 3}));
  ASSERT_TRUE(std::filesystem::exists(file));
  // Another pipeline with the same spec reads the file instead of its own source.
  auto never = Dataset::from_generator([]() -> Dataset::Generator { throw std::runtime_error("source read"); }, mapped.element_spec());
  EXPECT_EQ(ints(never.cache(file)), (std::vector<std::int64_t>{0, 1, 2, 3}));
  expect_error([&] { ints(Dataset::range(3).cache(file)); }, {file, "another spec"});
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 3);
  expect_error([&] { ints(never.cache(file)); }, {file, "truncated"});
  std::filesystem::remove_all(dir);
}

TEST(Dataset, ThreadsAreBoundedByTheirBuffers) {
  auto produced = std::make_shared<std::atomic<std::int64_t>>(0);
  {
    auto it = counting(-1, produced).prefetch(3).iterator();
    it.next();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_LE(produced->load(), 1 + 3);
    EXPECT_GE(produced->load(), 1);
  }
  produced->store(0);
  {
    auto it = counting(-1, produced).map([](const Element& e) { return e; }, 4).iterator();
    for (int k = 0; k < 5; ++k) it.next();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_LE(produced->load(), 5 + 4);
  }
  produced->store(0);
  {
    auto it = counting(-1, produced).prefetch(ef::data::kAutotune).iterator();
    for (int k = 0; k < 100; ++k) it.next();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_LE(produced->load(), 100 + 16);  // autotune grows to at most 16
  }
  expect_error([] { Dataset::range(3).prefetch(-7); }, {"prefetch"});
}

TEST(Dataset, StoppingEarlyCancelsTheWorkers) {
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  auto produced = std::make_shared<std::atomic<std::int64_t>>(0);
  auto slow = [](const Element& e) { return Element(ef::exp(ef::cast(e.tensor(), ef::DType::float32))); };
  Dataset endless = counting(-1, produced).map(slow, 3).prefetch(4).map(slow, 2).prefetch(ef::data::kAutotune);
  int n = 0;
  for (const Element& e : endless) {
    (void)e;
    if (++n == 10) break;
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
  try {
    for (const Element& e : endless) {
      (void)e;
      throw std::runtime_error("stop");
    }
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
  // An iterator dropped before its first element, and one that never started.
  { auto it = endless.iterator(); }
  {
    auto it = endless.iterator();
    it.next();
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

TEST(Dataset, SeededPipelinesRepeatExactly) {
  auto augment = [](const Element& e) {
    return Element({e[0] * ef::scalar(2.0f) + ef::scalar(1.0f), e[1]});
  };
  Tensor x = ef::reshape(ef::arange(0, 64, 1, ef::DType::float32), {32, 2});
  Tensor y = ef::arange(32, ef::DType::int64);
  auto run = [&] {
    Dataset ds = Dataset::from_tensor_slices({x, y}).shuffle(8, 11).map(augment, 3).batch(5).prefetch(2);
    std::vector<float> out;
    for (int pass = 0; pass < 2; ++pass)
      for (const Element& e : ds)
        for (float v : e[0].to_vector<float>()) out.push_back(v);
    return out;
  };
  auto a = run(), b = run();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 2u * 64u);
}

TEST(Dataset, ProgressBarCountsUpWhenTheTotalIsUnknown) {
  std::ostringstream os;
  ef::train::ProgressBar bar(os, -1, 1, /*terminal=*/true);
  bar.update(1, {{"loss", 0.5}});
  EXPECT_NE(os.str().find("1/Unknown"), std::string::npos) << os.str();
  bar.finish({{"loss", 0.5}}, 7);
  EXPECT_NE(os.str().find("7/7"), std::string::npos) << os.str();
}

// ---------------------------------------------------------------- fit / evaluate / predict
std::shared_ptr<ef::train::Sequential> small_model() {
  ef::random::set_seed(5);
  auto m = std::make_shared<ef::train::Sequential>();
  m->add<ef::nn::Dense>(8, "relu");
  m->add<ef::nn::Dense>(3);
  m->compile(std::make_shared<ef::optim::Adam>(1e-2), ef::train::SparseCategoricalCrossentropy(true), {"accuracy"});
  return m;
}

struct Toy {
  Tensor x, y;
};
Toy toy(std::int64_t n) {
  Tensor x = ef::random::stateless_normal({n, 4}, 9);
  Tensor y = ef::cast(ef::argmax(ef::slice(x, {0, 0}, {n, 3}), 1), ef::DType::int64);
  return {x, y};
}

TEST(DatasetFit, FitFromADatasetTracesOnceAndMatchesArrays) {
  Toy d = toy(100);  // batches of 32: the last has 4
  auto a = small_model();
  auto ha = a->fit(d.x, d.y, {.batch_size = 32, .epochs = 3, .shuffle = false, .verbose = 0});
  auto b = small_model();
  auto hb = b->fit(Dataset::from_tensor_slices({d.x, d.y}).batch(32), {.epochs = 3, .verbose = 0});
  EXPECT_EQ(b->tracing_count(), 1);
  ASSERT_EQ(hb.history.at("loss").size(), 3u);
  EXPECT_EQ(ha.history.at("loss"), hb.history.at("loss"));  // the same batches: the same numbers
  EXPECT_EQ(ha.history.at("accuracy"), hb.history.at("accuracy"));
  // evaluate and predict take datasets too, with a map and threads in the pipeline.
  Dataset eval = Dataset::from_tensor_slices({d.x, d.y}).map([](const Element& e) { return e; }, 2).batch(30).prefetch(2);
  auto la = a->evaluate(d.x, d.y, 30);
  auto lb = a->evaluate(eval);
  EXPECT_NEAR(la.at("loss"), lb.at("loss"), 1e-6);
  Tensor pa = a->predict(d.x, 30), pb = a->predict(eval);
  EXPECT_EQ(pb.shape(), ef::Shape({100, 3}));
  EXPECT_EQ(pa.to_vector<float>(), pb.to_vector<float>());
  EXPECT_EQ(a->predict(Dataset::from_tensor_slices(d.x).batch(64)).shape(), ef::Shape({100, 3}));
}

TEST(DatasetFit, StepsPerEpochValidationAndErrors) {
  Toy d = toy(64);
  auto m = small_model();
  Dataset train = Dataset::from_tensor_slices({d.x, d.y}).shuffle(64, 1).batch(16).repeat();
  Dataset val = Dataset::from_tensor_slices({d.x, d.y}).batch(32);
  ef::testing::CaptureStdout out;
  auto h = m->fit(train, {.epochs = 2, .validation_data = val, .verbose = 2, .steps_per_epoch = 3});
  EXPECT_EQ(h.history.at("val_loss").size(), 2u);
  EXPECT_EQ(m->tracing_count(), 1);
  EXPECT_NE(out.text().find("3/3"), std::string::npos) << out.text();
  // Unknown cardinality: counts up, and ends at the real count.
  auto gen = Dataset::from_tensor_slices({d.x, d.y}).filter([](const Element&) { return ef::scalar(true); }).batch(16);
  auto h2 = m->fit(gen, {.epochs = 1, .verbose = 2});
  EXPECT_NE(out.text().find("4/4"), std::string::npos) << out.text();
  EXPECT_EQ(h2.history.at("loss").size(), 1u);
  expect_error([&] { m->fit(train, {.epochs = 1, .verbose = 0}); }, {"infinite", "steps"});
  expect_error([&] { m->fit(Dataset::from_tensor_slices(d.x).batch(8), {.epochs = 1, .verbose = 0}); }, {"(x, y)"});
  expect_error([&] { m->fit(val, {.epochs = 1, .validation_split = 0.2, .verbose = 0}); }, {"validation_split"});
  // A finite dataset that runs out before steps_per_epoch * epochs: training stops (Keras).
  auto h3 = m->fit(val, {.epochs = 5, .verbose = 0, .steps_per_epoch = 2});
  EXPECT_EQ(h3.history.at("loss").size(), 1u);
  // Arrays with a dataset for validation.
  auto h4 = m->fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .validation_data = val, .verbose = 0});
  EXPECT_EQ(h4.history.at("val_accuracy").size(), 1u);
}

TEST(DatasetFit, EarlyStoppingEndsThePipeline) {
  Toy d = toy(64);
  auto m = small_model();
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  Dataset train = Dataset::from_tensor_slices({d.x, d.y}).map([](const Element& e) { return e; }, 2).batch(8).prefetch(4);
  struct StopAt2 : ef::train::Callback {
    void on_batch_end(int batch, const ef::train::Logs&) override {
      if (batch == 2) model->stop_training = true;
    }
  };
  auto h = m->fit(train, {.epochs = 3, .callbacks = {std::make_shared<StopAt2>()}, .verbose = 0});
  EXPECT_EQ(h.history.at("loss").size(), 1u);
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

}  // namespace
