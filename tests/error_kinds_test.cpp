// Errors have kinds: TF's status codes (and the Python built-in where TF's Python layer or Keras
// raise one the code does not imply), so that Python raises the class a TF program catches.
#include <eagerflow/data/text.h>
#include <eagerflow/nn/dtype_policy.h>

#include <fstream>
#include <new>

#include "test_util.h"

using namespace ef;
using ef::testing::fresh_temp_dir;

namespace {

// The kind of the ef::Error that `fn` throws (a test failure when it throws none).
template <class Fn> ErrorKind kind_of_call(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "expected ef::Error";
  return ErrorCode::unknown;
}

constexpr ErrorKind kInvalid{ErrorCode::invalid_argument};

std::shared_ptr<train::Sequential> small_model() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(4, "relu");
  model->add<nn::Dense>(2);
  return model;
}

}  // namespace

TEST(ErrorKinds, CodesHaveTfsNumbersAndNames) {
  EXPECT_EQ(static_cast<int>(ErrorCode::cancelled), 1);
  EXPECT_EQ(static_cast<int>(ErrorCode::invalid_argument), 3);
  EXPECT_EQ(static_cast<int>(ErrorCode::not_found), 5);
  EXPECT_EQ(static_cast<int>(ErrorCode::failed_precondition), 9);
  EXPECT_EQ(static_cast<int>(ErrorCode::out_of_range), 11);
  EXPECT_EQ(static_cast<int>(ErrorCode::unimplemented), 12);
  EXPECT_EQ(static_cast<int>(ErrorCode::data_loss), 15);
  EXPECT_STREQ(name_of(ErrorCode::invalid_argument), "INVALID_ARGUMENT");
  EXPECT_STREQ(name_of(ErrorCode::resource_exhausted), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(name_of(ErrorCode::data_loss), "DATA_LOSS");
}

TEST(ErrorKinds, FailDefaultsToInvalidArgumentAndCarriesAGivenKind) {
  EXPECT_EQ(kind_of_call([] { fail("op", "bad"); }), kInvalid);
  EXPECT_EQ(kind_of_call([] { throw Error("plain"); }), kInvalid);
  EXPECT_EQ(kind_of_call([] { fail(ErrorCode::not_found, "op", "gone"); }).code, ErrorCode::not_found);
  EXPECT_EQ(kind_of_call([] { fail(kWrongType, "op", "int"); }), kWrongType);
  try {
    NameScope scope("dense");
    fail(ErrorCode::unimplemented, "op", "not here");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unimplemented);
    EXPECT_EQ(std::string(e.what()), "[op] not here (in layer dense)");
  }
}

TEST(ErrorKinds, KindOfOtherExceptions) {
  EXPECT_EQ(kind_of(Error(ErrorCode::aborted, "x")).code, ErrorCode::aborted);
  EXPECT_EQ(kind_of(std::bad_alloc()).code, ErrorCode::resource_exhausted);
  EXPECT_EQ(kind_of(std::out_of_range("x")).code, ErrorCode::out_of_range);
  EXPECT_EQ(kind_of(std::runtime_error("x")).code, ErrorCode::unknown);
}

TEST(ErrorKinds, ShapeErrorsAreInvalidArgumentAndDtypeErrorsWrongType) {
  EXPECT_EQ(kind_of_call([] { matmul(ones({2, 3}), ones({4, 5})); }), kInvalid);
  EXPECT_EQ(kind_of_call([] { add(ones({2}), ones({3})); }), kInvalid);
  EXPECT_EQ(kind_of_call([] { add(ones({2}), ones({2}, DType::int32)); }), kWrongType);
  EXPECT_EQ(kind_of_call([] { matmul(ones({2, 2}, DType::bool_), ones({2, 2}, DType::bool_)); }), kWrongType);
  EXPECT_EQ(kind_of_call([] { ones({2}).data<int>(); }), kWrongType);
  // A Keras layer given an input that does not fit its weights: ValueError in Keras.
  nn::Dense dense(3);
  dense(ones({2, 4}));
  EXPECT_EQ(kind_of_call([&] { dense(ones({2, 5})); }), kInvalid);
}

TEST(ErrorKinds, InsideAFunctionTheKindOfTheTracedErrorIsKept) {
  auto f = function([](const Tensor& x) { return add(x, ones({2}, DType::int32)); });
  EXPECT_EQ(kind_of_call([&] { f(ones({2})); }), kWrongType);
  auto g = function([](const Tensor& x) { return matmul(x, ones({4, 5})); });
  EXPECT_EQ(kind_of_call([&] { g(ones({2, 3})); }), kInvalid);
  // Reading the value of a symbolic tensor: the trace is not in the state that needs.
  auto h = function([](const Tensor& x) {
    (void)x.item<float>();
    return x;
  });
  EXPECT_EQ(kind_of_call([&] { h(ones({1})); }).code, ErrorCode::failed_precondition);
  // A scan body's error keeps its kind behind the step it names.
  EXPECT_EQ(kind_of_call([] {
              scan(
                  [](const Tensor& c, const Tensor& x) {
                    return std::pair{add(c, x), c};
                  },
                  zeros({2}), ones({3, 2}, DType::int32));
            }),
            kWrongType);
}

TEST(ErrorKinds, VariableCreatedOnALaterTraceIsAFailedPreconditionAndAValueError) {
  std::vector<Variable> made;
  auto f = function([&](const Tensor& x) {
    made.emplace_back(zeros({1}), "late_" + std::to_string(x.dim(0)));
    return x;
  });
  f(ones({1}));
  EXPECT_EQ(kind_of_call([&] { f(ones({2})); }), ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error));
}

TEST(ErrorKinds, MissingFilesAreNotFound) {
  auto dir = fresh_temp_dir("error_kinds_missing");
  const std::string missing = (dir / "nothing_here").string();
  EXPECT_EQ(kind_of_call([&] { load_model(missing + ".efmodel"); }), kFileNotFound);
  EXPECT_EQ(kind_of_call([&] { io::load_safetensors(missing + ".safetensors"); }), kFileNotFound);
  EXPECT_EQ(kind_of_call([&] { ef::load(missing); }), kFileNotFound);
  EXPECT_EQ(kind_of_call([&] { data::read_text(missing + ".txt"); }), kFileNotFound);
  auto model = small_model();
  model->build(Shape({kDynamic, 3}));
  EXPECT_EQ(kind_of_call([&] { model->load_weights(missing + ".weights.h5"); }).code, ErrorCode::not_found);
}

TEST(ErrorKinds, DamagedFilesAreDataLoss) {
  auto dir = fresh_temp_dir("error_kinds_damaged");
  const std::string path = (dir / "short.safetensors").string();
  std::ofstream(path) << "abc";
  EXPECT_EQ(kind_of_call([&] { io::load_safetensors(path); }).code, ErrorCode::data_loss);
}

TEST(ErrorKinds, UsingAModelBeforeCompileIsAFailedPrecondition) {
  auto model = small_model();
  // Keras 3 raises ValueError there (tf.keras 2 RuntimeError, which every ef.Error is).
  EXPECT_EQ(kind_of_call([&] {
              model->fit(zeros({4, 3}), zeros({4, 2}));
            }),
            ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error));
}

TEST(ErrorKinds, MissingFeaturesAreUnimplemented) {
  EXPECT_EQ(kind_of_call([] { (void)math::norm(ones({3, 3}), "2", {0, 1}); }).code, ErrorCode::unimplemented);  // matrix 2-norm
  EXPECT_EQ(kind_of_call([] { (void)nn::DTypePolicy("no_such_policy"); }), kInvalid);
}

TEST(ErrorKinds, AllocationsBeyondTheLimitAreResourceExhausted) {
  EXPECT_EQ(kind_of_call([] {
              zeros({std::int64_t{1} << 30, std::int64_t{1} << 30});
            }).code,
            ErrorCode::resource_exhausted);
}
