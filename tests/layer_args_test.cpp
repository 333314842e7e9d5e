// One declared argument list per layer (issue 30; eagerflow/nn/layer_args.h): Dense's table
// drives its constructor checks, get_config and its factory, and Keras' base rules (a built
// layer's policy is fixed, input_shape builds a Sequential) hold in C++ itself.
#include <set>

#include "test_util.h"
#include "nn/layer_args.h"  // the table machinery (src/nn/layer_args.h)

using namespace ef;
using ef::testing::expect_error;

namespace {

std::vector<float> floats(const Tensor& t) { return cast(t, DType::float32).to_vector<float>(); }

// Every argument of Dense set away from its default.
nn::DenseOptions unusual_dense() {
  nn::DenseOptions o;
  o.units = 3;
  o.activation = nn::ActivationFn("tanh");
  o.use_bias = false;
  o.kernel_initializer = nn::ones_initializer();
  o.bias_initializer = nn::constant_initializer(3.0);
  o.kernel_regularizer = nn::l1(0.25);
  o.bias_regularizer = nn::l2(0.5);
  o.activity_regularizer = nn::l1_l2(0.125, 0.375);
  o.kernel_constraint = nn::max_norm(1.5);
  o.bias_constraint = nn::non_neg();
  o.name = "probe";
  o.trainable = false;
  o.dtype = nn::DTypePolicy("float64");
  o.input_shape = std::vector<std::int64_t>{2};
  o.batch_size = 5;
  return o;
}

std::set<std::string> names_with(nn::ArgUse use) {
  std::set<std::string> out;
  for (const auto& a : nn::Dense::args())
    if (a.use == use) out.emplace(a.name);
  return out;
}

}  // namespace

TEST(LayerArgs, DenseDeclaresKerasArgumentsInKerasOrder) {
  std::vector<std::string> names;
  for (const auto& a : nn::Dense::args()) names.emplace_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"units", "activation", "use_bias", "kernel_initializer", "bias_initializer",
                                             "kernel_regularizer", "bias_regularizer", "activity_regularizer",
                                             "kernel_constraint", "bias_constraint", "name", "trainable", "dtype",
                                             "input_shape", "input_dim", "batch_size"}));
  // Keras' positional arguments end where its **kwargs begin.
  std::set<std::string> keyword_only;
  for (const auto& a : nn::Dense::args())
    if (a.keyword_only) keyword_only.emplace(a.name);
  EXPECT_EQ(keyword_only, (std::set<std::string>{"name", "trainable", "dtype", "input_shape", "input_dim", "batch_size"}));
}

TEST(LayerArgs, EverySavedDenseArgumentRoundTripsThroughItsConfig) {
  auto probe = std::make_shared<nn::Dense>(unusual_dense());
  nn::DenseOptions plain_options;
  plain_options.units = 1;
  auto plain = std::make_shared<nn::Dense>(plain_options);
  nn::LayerConfig c = *probe->get_config();
  nn::LayerConfig d = *plain->get_config();
  std::set<std::string> saved = names_with(nn::ArgUse::config);
  for (const auto& n : names_with(nn::ArgUse::base_config)) saved.insert(n);
  for (const auto& name : saved) {
    ASSERT_TRUE(c.config.has(name)) << name;
    // The value set reached the config: it differs from a default layer's.
    EXPECT_FALSE(d.config.has(name) && *d.config.find(name) == *c.config.find(name)) << name;
  }
  // The keys saved files hold, unchanged by the table: base_config's, then Dense's own in order.
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.config.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "trainable", "dtype", "activity_regularizer", "units", "activation",
                                            "use_bias", "kernel_initializer", "bias_initializer", "kernel_regularizer",
                                            "bias_regularizer", "kernel_constraint", "bias_constraint"}));
  auto rebuilt = std::dynamic_pointer_cast<nn::Dense>(nn::layer_from_config(c));
  ASSERT_TRUE(rebuilt);
  EXPECT_TRUE(rebuilt->get_config()->config == c.config);
  EXPECT_EQ(rebuilt->units(), 3);
  EXPECT_FALSE(rebuilt->options().use_bias);
  EXPECT_EQ(rebuilt->options().activation.name(), "tanh");
  EXPECT_EQ(rebuilt->dtype_policy().name(), "float64");
  EXPECT_FALSE(rebuilt->trainable());
  ASSERT_NE(rebuilt->activity_regularizer(), nullptr);
  EXPECT_EQ(rebuilt->activity_regularizer()->l2(), 0.375);
  EXPECT_EQ(rebuilt->kernel_constraint.name(), "max_norm");
  // The initializers travel too (clone_model, from_config): Keras 3's serialized forms.
  const nn::ConfigMap& kernel_init = c.config.map("kernel_initializer");
  EXPECT_EQ(kernel_init.text("class_name"), "Ones");
  EXPECT_EQ(kernel_init.text("module"), "keras.initializers");
  EXPECT_EQ(c.config.map("bias_initializer").map("config").real("value"), 3.0);
  EXPECT_EQ(rebuilt->options().kernel_initializer.keras_class, "Ones");
  ef::testing::expect_close(floats(rebuilt->options().bias_initializer(Shape{2}, DType::float32)), {3, 3});
}

TEST(LayerArgs, InitializersRoundTripByKerasNameAndAFunctionOfYourOwnIsLeftOut) {
  for (const nn::Initializer& init :
       {nn::zeros_initializer(), nn::constant_initializer(-2.5), nn::random_uniform_initializer(-1, 2, 7),
        nn::random_normal_initializer(1, 3, 8), nn::truncated_normal_initializer(0, 2, 9), nn::glorot_uniform_initializer(4),
        nn::glorot_normal_initializer(5), nn::he_normal_initializer(6), nn::he_uniform_initializer(1),
        nn::lecun_normal_initializer(2), nn::lecun_uniform_initializer(3), nn::variance_scaling_initializer(3, "fan_out", "uniform", 11),
        nn::identity_initializer(2), nn::orthogonal_initializer(1.5)}) {
    SCOPED_TRACE(init.keras_class);
    nn::ConfigValue config = nn::initializer_config(init);
    std::optional<nn::Initializer> back = nn::initializer_from_config(config, "test");
    ASSERT_TRUE(back);
    EXPECT_EQ(back->keras_class, init.keras_class);
    EXPECT_TRUE(back->keras_arguments == init.keras_arguments);
    const nn::ConfigValue* seed = init.keras_arguments.find("seed");
    if (!seed || !seed->is_null()) {  // a seeded or fixed initializer: the same values back
      EXPECT_EQ(floats((*back)(Shape{4, 4}, DType::float32)), floats(init(Shape{4, 4}, DType::float32)));
    }
  }
  // By Keras name, snake or class, and Keras 2's class names.
  EXPECT_EQ(nn::initializer_from_config(nn::ConfigValue("he_normal"), "t")->keras_class, "HeNormal");
  EXPECT_EQ(nn::initializer_from_config(nn::ConfigValue("GlorotUniform"), "t")->keras_class, "GlorotUniform");
  nn::ConfigMap orthogonal;
  orthogonal.set("class_name", "Orthogonal");
  EXPECT_EQ(nn::initializer_from_config(orthogonal, "t")->keras_class, "OrthogonalInitializer");
  nn::ConfigMap custom;
  custom.set("class_name", "MyInitializer");
  EXPECT_FALSE(nn::initializer_from_config(custom, "t"));  // a Python class: the layer keeps its default
  EXPECT_FALSE(nn::initializer_from_config(nn::ConfigValue(), "t"));
  expect_error([] { nn::initializer_from_config(nn::ConfigValue("no_such_init"), "t"); }, {"unknown initializer", "no_such_init"});
  expect_error([] { nn::initializer_from_config(nn::ConfigValue(3.0), "layer 'd'"); }, {"layer 'd'", "class_name"});

  nn::DenseOptions own;
  own.units = 2;
  own.kernel_initializer = [](const Shape& s, DType t) { return ones(s, t); };  // no Keras name
  nn::LayerConfig c = *nn::Dense(own).get_config();
  EXPECT_FALSE(c.config.has("kernel_initializer"));
  EXPECT_TRUE(c.config.has("bias_initializer"));
}

TEST(LayerArgs, ConstructorOnlyArgumentsReachTheLayer) {
  EXPECT_EQ(names_with(nn::ArgUse::construct_only), (std::set<std::string>{"input_shape", "input_dim", "batch_size"}));
  nn::DenseOptions o = unusual_dense();
  o.use_bias = true;
  o.dtype.reset();
  nn::Dense dense(o);
  Tensor y = dense(tensor({{1.0f, 2.0f}}));
  ef::testing::expect_close(floats(dense.kernel().value()), {1, 1, 1, 1, 1, 1});
  ef::testing::expect_close(floats(dense.bias().value()), {3, 3, 3});
  ef::testing::expect_close(floats(y), std::vector<float>(3, std::tanh(6.0f)));
  ASSERT_TRUE(dense.declared_input_shape());
  EXPECT_EQ(*dense.declared_input_shape(), (Shape{5, 2}));
  nn::DenseOptions by_dim;
  by_dim.units = 2;
  by_dim.input_dim = 7;
  EXPECT_EQ(*nn::Dense(by_dim).declared_input_shape(), (Shape{kDynamic, 7}));
  EXPECT_FALSE(nn::Dense(2).declared_input_shape());
}

TEST(LayerArgs, DeclaredChecksAndConfigErrorsNameTheArgument) {
  nn::DenseOptions zero;
  try {
    nn::Dense d(zero);
    ADD_FAILURE() << "units = 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("units must be positive, got 0"), std::string::npos) << e.what();
  }
  nn::LayerConfig c = *nn::Dense(4).get_config();
  c.config.set("units", "four");
  expect_error([&] { nn::layer_from_config(c); }, {"(Dense)", "'units' must be an integer"});
  nn::LayerConfig missing{"Dense", {}};
  missing.config.set("name", "no_units");
  expect_error([&] { nn::layer_from_config(missing); }, {"no_units", "'units' is missing"});
  // A key a config lacks (written before the argument existed) keeps the default.
  nn::LayerConfig old{"Dense", {}};
  old.config.set("name", "old");
  old.config.set("units", 2);
  auto from_old = std::dynamic_pointer_cast<nn::Dense>(nn::layer_from_config(old));
  ASSERT_TRUE(from_old);
  EXPECT_TRUE(from_old->options().use_bias);
  EXPECT_EQ(from_old->options().activation.name(), "linear");
}

TEST(LayerArgs, ABuiltLayersDtypePolicyCannotChange) {
  nn::Dense dense(2);
  dense.set_dtype_policy(nn::DTypePolicy("float64"));  // before the first call: allowed
  dense(tensor(std::vector<double>{1.0, 2.0}, Shape{1, 2}));
  dense.set_dtype_policy(nn::DTypePolicy("float64"));  // the same policy: no change
  try {
    dense.set_dtype_policy(nn::DTypePolicy("float32"));
    ADD_FAILURE() << "a built layer's policy changed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_EQ(e.kind().python, PythonBuiltin::value_error);  // Keras' ValueError
    EXPECT_NE(std::string(e.what()).find("is built"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dense.dtype_policy().name(), "float64");
  EXPECT_EQ(dense.kernel().dtype(), DType::float64);
}

TEST(LayerArgs, InputShapeOnTheFirstLayerBuildsASequential) {
  nn::DenseOptions first;
  first.units = 4;
  first.input_shape = std::vector<std::int64_t>{3};
  train::Sequential m({std::make_shared<nn::Dense>(first), std::make_shared<nn::Dense>(2)});
  EXPECT_TRUE(m.built());
  std::vector<Shape> shapes;
  for (const auto& w : m.weights()) shapes.push_back(w.shape());
  EXPECT_EQ(shapes, (std::vector<Shape>{Shape{3, 4}, Shape{4}, Shape{4, 2}, Shape{2}}));
  train::Sequential unbuilt({std::make_shared<nn::Dense>(4), std::make_shared<nn::Dense>(2)});
  EXPECT_FALSE(unbuilt.built());
}

TEST(LayerArgs, DropoutRoundTripsAndChecksItsDeclaredArguments) {
  nn::DropoutOptions o;
  o.rate = 0.25;
  o.seed = 9;
  o.name = "drop";
  auto drop = std::make_shared<nn::Dropout>(o);
  nn::LayerConfig c = *drop->get_config();
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.config.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "trainable", "dtype", "rate", "seed"}));
  EXPECT_EQ(c.config.real("rate"), 0.25);
  EXPECT_EQ(c.config.integer("seed"), 9);
  auto rebuilt = std::dynamic_pointer_cast<nn::Dropout>(nn::layer_from_config(c));
  ASSERT_TRUE(rebuilt);
  EXPECT_TRUE(rebuilt->get_config()->config == c.config);
  // The seed reached the layer: the rebuilt layer draws the original's first mask.
  Tensor x = ef::ones({4, 8});
  EXPECT_EQ(floats((*drop)(x, true)), floats((*rebuilt)(x, true)));
  EXPECT_TRUE(nn::Dropout(0.5).get_config()->config.at("seed").is_null());
  o.rate = 1.0;
  expect_error([&] { nn::Dropout d(o); }, {"[dropout]", "rate must be in [0, 1), got 1"});
  o.rate = 0.5;
  o.seed = -1;
  expect_error([&] { nn::Dropout d(o); }, {"[dropout]", "seed must be non-negative, got -1"});
}

TEST(LayerArgs, Conv2DRoundTripsAndChecksItsDeclaredArguments) {
  nn::Conv2DOptions o;
  o.filters = 3;
  o.kernel_size = {2, 1};
  o.strides = {2, 2};
  o.padding = "same";
  o.dilation_rate = {1, 1};
  o.activation = nn::ActivationFn("relu");
  o.use_bias = false;
  o.kernel_initializer = nn::ones_initializer();
  o.kernel_regularizer = nn::l2(0.5);
  o.bias_constraint = nn::non_neg();
  o.name = "conv";
  auto conv = std::make_shared<nn::Conv2D>(o);
  nn::LayerConfig c = *conv->get_config();
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.config.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "trainable", "dtype", "filters", "kernel_size", "strides", "padding",
                                            "dilation_rate", "activation", "use_bias", "kernel_initializer",
                                            "bias_initializer", "kernel_regularizer", "bias_regularizer",
                                            "kernel_constraint", "bias_constraint"}));
  EXPECT_EQ(c.config.ints("kernel_size"), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(c.config.text("padding"), "same");
  auto rebuilt = std::dynamic_pointer_cast<nn::Conv2D>(nn::layer_from_config(c));
  ASSERT_TRUE(rebuilt);
  EXPECT_TRUE(rebuilt->get_config()->config == c.config);
  // The constructor-only initializer reached the kernel: [2, 1, channels, filters] of ones.
  Tensor y = (*conv)(ef::ones({1, 4, 4, 2}));
  EXPECT_EQ(conv->kernel().shape(), (Shape{2, 1, 2, 3}));
  ef::testing::expect_close(floats(conv->kernel().value()), std::vector<float>(12, 1.0f));
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 3}));
  nn::Conv2DOptions bad = o;
  bad.padding = "full";
  expect_error([&] { nn::Conv2D l(bad); }, {"[conv2d]", "padding must be \"valid\" or \"same\", got \"full\""});
  bad = o;
  bad.kernel_size = {0, 3};
  expect_error([&] { nn::Conv2D l(bad); }, {"[conv2d]", "kernel_size must be positive"});
  bad = o;
  bad.data_format = "channels_first";
  expect_error([&] { nn::Conv2D l(bad); }, {"[conv2d]", "channels_last"});
  // The positional constructor and designated initializers of the layer's own options still work.
  EXPECT_EQ(nn::Conv2D(4, Stride2{3, 3}, nn::Conv2DOptions{.padding = "same", .activation = "tanh"}).options().padding, "same");
}

TEST(LayerArgs, ATableDeclaringACheckItsTypeLacksIsAnInternalError) {
  struct Options : nn::LayerOptions {
    std::int64_t size = 1;
    std::string mode = "valid";
  };
  std::vector<nn::LayerArg<Options>> table{{"size", &Options::size, nn::ArgUse::config, false, false, nn::ArgCheck::padding}};
  Options o;
  try {
    nn::check_options<Options>(o, table, "probe");
    ADD_FAILURE() << "a padding check on an integer passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_NE(std::string(e.what()).find("'size' declares a check its type does not have"), std::string::npos) << e.what();
  }
  // The same machinery with a check that fits: the rule and its message.
  std::vector<nn::LayerArg<Options>> good{{"mode", &Options::mode, nn::ArgUse::config, false, false, nn::ArgCheck::padding}};
  o.mode = "full";
  expect_error([&] { nn::check_options<Options>(o, good, "probe"); }, {"[probe]", "mode must be \"valid\" or \"same\""});
  // write_config and options_from_config over it: the key round-trips.
  o.mode = "same";
  nn::ConfigMap c;
  nn::write_config<Options>(o, good, c, "probe");
  EXPECT_EQ(c.text("mode"), "same");
  EXPECT_EQ(nn::options_from_config<Options>(c, good).mode, "same");
}

TEST(LayerArgs, RecurrentEmbeddingAndNormalizationInitializersBuildAndRoundTrip) {
  nn::RNNOptions o;
  o.kernel_initializer = nn::ones_initializer();
  o.recurrent_initializer = nn::zeros_initializer();
  o.bias_initializer = nn::constant_initializer(0.5);
  auto lstm = std::make_shared<nn::LSTM>(2, o, "lstm");
  (*lstm)(ones({1, 2, 3}));
  ef::testing::expect_close(floats(lstm->kernel().value()), std::vector<float>(24, 1.0f));
  ef::testing::expect_close(floats(lstm->recurrent_kernel().value()), std::vector<float>(16, 0.0f));
  // unit_forget_bias: the forget gate's ones, the other gates' from bias_initializer (Keras').
  ef::testing::expect_close(floats(lstm->bias().value()), {0.5, 0.5, 1, 1, 0.5, 0.5, 0.5, 0.5});
  nn::LayerConfig c = *lstm->get_config();
  EXPECT_EQ(c.config.map("recurrent_initializer").text("class_name"), "Zeros");
  auto again = std::dynamic_pointer_cast<nn::LSTM>(nn::layer_from_config(c));
  ASSERT_TRUE(again);
  (*again)(ones({1, 2, 3}));
  EXPECT_EQ(floats(again->bias().value()), floats(lstm->bias().value()));
  EXPECT_TRUE(again->get_config()->config == c.config);

  nn::Embedding emb(4, 2, "emb");
  emb.embeddings_initializer = nn::constant_initializer(-1.0);
  emb(tensor(std::vector<std::int64_t>{1, 3}));
  ef::testing::expect_close(floats(emb.embeddings().value()), std::vector<float>(8, -1.0f));
  auto emb_again = std::dynamic_pointer_cast<nn::Embedding>(nn::layer_from_config(*emb.get_config()));
  ASSERT_TRUE(emb_again);
  EXPECT_EQ(emb_again->embeddings_initializer.keras_class, "Constant");

  nn::BatchNormalizationOptions bo;
  bo.gamma_initializer = nn::zeros_initializer();
  bo.moving_variance_initializer = nn::constant_initializer(2.0);
  nn::BatchNormalization bn(bo, "bn");
  bn(ones({2, 3}));
  ef::testing::expect_close(floats(bn.gamma().value()), {0, 0, 0});
  ef::testing::expect_close(floats(bn.moving_variance().value()), {2, 2, 2});
  auto bn_again = nn::layer_from_config(*bn.get_config());
  EXPECT_TRUE(bn_again->get_config()->config == bn.get_config()->config);
}
