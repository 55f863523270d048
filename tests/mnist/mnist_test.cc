// The pieces of train_mnist on their own: the IDX reader on the bundled
// digits and on broken files, safetensors read back by a parser of the
// test's own, the model's gradients against finite differences, Adadelta
// and the learning-rate schedules.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "mnist/adadelta.h"
#include "mnist/augment.h"
#include "mnist/idx.h"
#include "mnist/kernels.h"
#include "mnist/model.h"
#include "mnist/safetensors.h"
#include "mnist/schedule.h"
#include "tests/util/temp_dir.h"

namespace hvd::mnist {
namespace {

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

TEST(IdxTest, ReadsTheBundledDigits) {
  auto train = ReadIdxPair(HVD_MNIST_DATA, "train");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->count, 8000);
  EXPECT_EQ(train->pixels.size(), 8000u * 28 * 28);
  auto test = ReadIdxPair(HVD_MNIST_DATA, "t10k");
  ASSERT_TRUE(test.ok());
  EXPECT_EQ(test->count, 2000);
  // Every digit appears; pixels use the grey range.
  std::vector<int> per(10);
  for (uint8_t l : test->labels) per[l]++;
  for (int c : per) EXPECT_GT(c, 100);
  EXPECT_EQ(*std::max_element(test->pixels.begin(), test->pixels.end()), 255);
}

TEST(IdxTest, RawFilesReadLikeGzipOnesAndBrokenOnesNameTheFile) {
  testing::TempDir dir;
  std::string images =
      Gunzip(std::string(HVD_MNIST_DATA) + "/t10k-images-idx3-ubyte.gz");
  std::string labels =
      Gunzip(std::string(HVD_MNIST_DATA) + "/t10k-labels-idx1-ubyte.gz");
  dir.Write("t10k-images-idx3-ubyte", images);
  dir.Write("t10k-labels-idx1-ubyte", labels);
  auto raw = ReadIdxPair(dir.path(), "t10k");
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  auto gz = ReadIdxPair(HVD_MNIST_DATA, "t10k");
  EXPECT_EQ(raw->pixels, gz->pixels);
  EXPECT_EQ(raw->labels, gz->labels);
  // Truncated images.
  dir.Write("t10k-images-idx3-ubyte", images.substr(0, images.size() - 7));
  auto bad = ReadIdxPair(dir.path(), "t10k");
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().ToString().find("t10k-images-idx3-ubyte"),
            std::string::npos);
  EXPECT_NE(bad.status().ToString().find("header promises"), std::string::npos);
  // Labels where images belong: the magic number says so.
  dir.Write("t10k-images-idx3-ubyte", labels);
  bad = ReadIdxPair(dir.path(), "t10k");
  EXPECT_NE(bad.status().ToString().find("magic number 2049, expected 2051"),
            std::string::npos)
      << bad.status().ToString();
  // Fewer labels than images.
  dir.Write("t10k-images-idx3-ubyte", images);
  std::string fewer = labels.substr(0, labels.size() - 1);
  fewer[7] =
      static_cast<char>(static_cast<uint8_t>(fewer[7]) - 1);  // count - 1
  dir.Write("t10k-labels-idx1-ubyte", fewer);
  bad = ReadIdxPair(dir.path(), "t10k");
  EXPECT_NE(bad.status().ToString().find("1999 labels for 2000 images"),
            std::string::npos)
      << bad.status().ToString();
  // Dimensions whose product wraps around (2^66 is 0 modulo 2^64) must
  // not pass for the size of no data at all; a broken gzip stream's
  // message must outlive the stream (found by fuzzing: it was read after
  // gzclose freed it).
  std::string wraps("\x00\x00\x08\x03", 4);
  for (int d = 0; d < 3; ++d) wraps += std::string("\x00\x40\x00\x00", 4);
  dir.Write("t10k-images-idx3-ubyte", wraps);
  bad = ReadIdxPair(dir.path(), "t10k");
  EXPECT_NE(bad.status().ToString().find("product does not fit in 64 bits"),
            std::string::npos)
      << bad.status().ToString();
  std::ifstream gz_file(
      std::string(HVD_MNIST_DATA) + "/t10k-images-idx3-ubyte.gz",
      std::ios::binary);
  std::string gz_bytes((std::istreambuf_iterator<char>(gz_file)),
                       std::istreambuf_iterator<char>());
  dir.Write("t10k-images-idx3-ubyte", gz_bytes.substr(0, 200));
  bad = ReadIdxPair(dir.path(), "t10k");
  EXPECT_NE(bad.status().ToString().find("is not valid gzip: "),
            std::string::npos)
      << bad.status().ToString();
  // Missing: the message names the file and what the folder should hold.
  Status missing = ReadIdxPair(dir.path() + "/nowhere", "t10k").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(
      missing.ToString().find(
          "has no t10k-images-idx3-ubyte (nor t10k-images-idx3-ubyte.gz)"),
      std::string::npos)
      << missing.ToString();
  EXPECT_NE(missing.ToString().find("MNIST's four IDX files"),
            std::string::npos);
}

TEST(IdxTest, ReadsFashionMnistUnchanged) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!testing::Shell("test -r " + dir + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install "
                    "dataset-fashion-mnist; packaging/install-deps.sh does)";
  }
  auto train = ReadIdxPair(dir, "train");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->count, 60000);
  auto test = ReadIdxPair(dir, "t10k");
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(test->count, 10000);
}

TEST(SafetensorsTest, WritesWhatAnIndependentReaderReads) {
  testing::TempDir dir;
  Checkpoint c;
  c.tensors.push_back({"w", {2, 3}, {1, 2, 3, 4, 5, 6}});
  c.tensors.push_back({"b", {3}, {-1, 0.5f, 7}});
  c.metadata = {{"epoch", "4"}, {"lr", "0.5"}};
  std::string path = dir.path() + "/ckpt.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, c).ok());
  // The test's own reading of the format.
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = len << 8 | static_cast<uint8_t>(bytes[i]);
  ASSERT_EQ((8 + len) % 8, 0u) << "data is 8-byte aligned";
  auto header = nlohmann::json::parse(bytes.substr(8, len));
  EXPECT_EQ(header["__metadata__"]["epoch"], "4");
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({2, 3}));
  size_t begin = header["b"]["data_offsets"][0],
         end = header["b"]["data_offsets"][1];
  ASSERT_EQ(end - begin, 12u);
  float b1;
  std::memcpy(&b1, bytes.data() + 8 + len + begin + 4, 4);
  EXPECT_EQ(b1, 0.5f);
  EXPECT_EQ(bytes.size(), 8 + len + 36);
  // Our reader agrees, and no temporary file is left behind.
  auto back = ReadSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->metadata.at("lr"), "0.5");
  ASSERT_EQ(back->tensors.size(), 2u);
  EXPECT_TRUE(testing::Shell("test $(ls " + dir.path() + " | wc -l) -eq 1"));
  // A torn file is refused with its name.
  dir.Write("torn.safetensors", bytes.substr(0, bytes.size() - 5));
  auto torn = ReadSafetensors(dir.path() + "/torn.safetensors");
  EXPECT_EQ(torn.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(torn.status().ToString().find("torn.safetensors"),
            std::string::npos);
}

// Checks `model`'s gradients on 8 test digits against central differences
// of the loss that `loss` computes for the model's current values (the
// three largest entries of each parameter).
void ExpectGradientsMatchFiniteDifferences(
    Model& model,
    const std::function<double(Model&, const float*, const uint8_t*, int)>&
        loss) {
  // Zero biases put every background pixel's pre-activation exactly on
  // ReLU's kink, where finite differences are one-sided: move them off.
  for (Param& p : model.params()) {
    if (p.dims.size() == 1) {
      for (size_t i = 0; i < p.value.size(); ++i)
        p.value[i] = 0.01f * (1 + i % 7);
    }
  }
  auto data = ReadIdxPair(HVD_MNIST_DATA, "t10k");
  ASSERT_TRUE(data.ok());
  const int n = 8;
  std::vector<float> x(n * 784);
  for (size_t i = 0; i < x.size(); ++i) x[i] = data->pixels[i] / 255.0f;
  const uint8_t* y = data->labels.data();
  ASSERT_TRUE(model.Forward(x.data(), y, n, true).ok());
  ASSERT_TRUE(model.Backward().ok());
  std::vector<Param> analytic = model.params();
  int checked = 0;
  for (size_t k = 0; k < model.params().size(); ++k) {
    Param& p = model.params()[k];
    // The entries with the largest gradients: well above float noise.
    std::vector<size_t> idx(p.value.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(
        idx.begin(), idx.begin() + 3, idx.end(), [&](size_t a, size_t b) {
          return std::abs(analytic[k].grad[a]) > std::abs(analytic[k].grad[b]);
        });
    for (int j = 0; j < 3; ++j) {
      size_t i = idx[j];
      // Large enough that float32 rounding of the loss stays small.
      const float eps = std::max(1e-3f, 1e-2f * std::abs(p.value[i]));
      float saved = p.value[i];
      p.value[i] = saved + eps;
      double up = loss(model, x.data(), y, n);
      p.value[i] = saved - eps;
      double down = loss(model, x.data(), y, n);
      p.value[i] = saved;
      double numeric = (up - down) / (2 * eps);
      double g = analytic[k].grad[i];
      EXPECT_NEAR(numeric, g, 0.1 * std::abs(g) + 1e-3)
          << p.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);
}

TEST(ModelTest, GradientsMatchFiniteDifferences) {
  Model model(7);
  model.set_dropout(false);
  ExpectGradientsMatchFiniteDifferences(
      model, [](Model& m, const float* x, const uint8_t* y, int n) {
        return m.Forward(x, y, n, true)->loss;
      });
}

// With dropout on: a model made from the same seed draws the same masks in
// its first forward, so each perturbed loss is taken by a fresh twin
// holding the perturbed values; the masks' scaling and their use in the
// backward pass are then checked like the rest.
TEST(ModelTest, GradientsThroughDropoutMatchFiniteDifferences) {
  constexpr uint64_t kSeed = 11;
  Model model(kSeed);
  ExpectGradientsMatchFiniteDifferences(
      model, [&](Model& m, const float* x, const uint8_t* y, int n) {
        Model twin(kSeed);
        twin.params() = m.params();
        return twin.Forward(x, y, n, true)->loss;
      });
  // The masks did drop something: without them the loss differs.
  auto data = ReadIdxPair(HVD_MNIST_DATA, "t10k");
  ASSERT_TRUE(data.ok());
  std::vector<float> x(8 * 784);
  for (size_t i = 0; i < x.size(); ++i) x[i] = data->pixels[i] / 255.0f;
  Model with(kSeed), without(kSeed);
  with.params() = model.params();
  without.params() = model.params();
  without.set_dropout(false);
  EXPECT_NE(with.Forward(x.data(), data->labels.data(), 8, true)->loss,
            without.Forward(x.data(), data->labels.data(), 8, true)->loss);
}

TEST(ModelTest, KerasInitialisation) {
  Model m(1);
  const auto& p = m.params();
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[0].dims, (std::vector<int64_t>{32, 1, 3, 3}));
  EXPECT_EQ(p[4].dims, (std::vector<int64_t>{128, 64, 12, 12}));
  // Glorot uniform limits; biases start at zero.
  const double dense1 = std::sqrt(6.0 / (9216 + 128));
  float hi = *std::max_element(p[4].value.begin(), p[4].value.end());
  EXPECT_LE(hi, dense1);
  EXPECT_GT(hi, 0.95 * dense1);
  for (float b : p[5].value) EXPECT_EQ(b, 0.0f);
}

TEST(AugmentTest, IdentityWithoutRangesAndInkKeptWithThem) {
  auto data = ReadIdxPair(HVD_MNIST_DATA, "t10k");
  ASSERT_TRUE(data.ok());
  std::vector<float> in(784), out(784);
  for (int i = 0; i < 784; ++i) in[i] = data->pixels[i] / 255.0f;
  std::mt19937 gen(1);
  Augment(in.data(), out.data(), AugmentOptions{0, 0, 0}, gen);
  EXPECT_EQ(in, out);
  double ink = 0;
  for (float v : in) ink += v;
  bool changed = false;
  for (int k = 0; k < 20; ++k) {
    Augment(in.data(), out.data(), AugmentOptions{}, gen);
    double after = 0;
    for (float v : out) after += v;
    // +-10 % zoom per axis changes the ink by at most about a fifth.
    EXPECT_NEAR(after, ink, 0.3 * ink);
    changed |= out != in;
  }
  EXPECT_TRUE(changed);
}

TEST(AdadeltaTest, OneStepFollowsKerasFormula) {
  std::vector<Param> params(1);
  params[0].value = {1.0f};
  params[0].grad = {0.5f};
  Adadelta opt(params);
  opt.Apply(params, 1.0f);
  double ag = 0.05 * 0.25;
  double update = 0.5 * std::sqrt(1e-7) / std::sqrt(ag + 1e-7);
  EXPECT_NEAR(params[0].value[0], 1.0 - update, 1e-6);
  auto slots = opt.slots();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_NEAR((*slots[0].data)[0], ag, 1e-8);
  EXPECT_NEAR((*slots[1].data)[0], 0.05 * update * update, 1e-12);
}

// Many parameters at once, so the vectorised body and its tail both run.
TEST(AdadeltaTest, EveryElementOfALongTensorFollowsTheFormula) {
  std::vector<Param> params(1);
  const size_t n = 1037;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    params[0].value.push_back(u(gen));
    params[0].grad.push_back(u(gen));
  }
  std::vector<double> w(params[0].value.begin(), params[0].value.end());
  std::vector<double> ag(n, 0.0), av(n, 0.0);
  Adadelta opt(params);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < n; ++i) {
      double g = params[0].grad[i];
      ag[i] = 0.95 * ag[i] + 0.05 * g * g;
      double update = g * std::sqrt(av[i] + 1e-7) / std::sqrt(ag[i] + 1e-7);
      w[i] -= 0.5 * update;
      av[i] = 0.95 * av[i] + 0.05 * update * update;
    }
    opt.Apply(params, 0.5f);
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(params[0].value[i], w[i], 1e-5) << "element " << i;
    ASSERT_NEAR((*opt.slots()[1].data)[i], av[i], 1e-6 + 1e-4 * av[i]);
  }
}

// Every rank applies the same averaged gradients to the same weights, and
// the ranks stay identical only if the update gives the same bits wherever
// the buffers lie: buffers close together (a scalar loop, after the
// vectoriser's overlap check) and apart (the vector body and its tail)
// must agree exactly, over several steps and lengths.
TEST(KernelsTest, AdadeltaUpdateGivesTheSameBitsWhereverTheBuffersLie) {
  for (size_t n : {10u, 37u, 1037u}) {
    std::mt19937 gen(static_cast<uint32_t>(n));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> w0(n), g(n);
    for (size_t i = 0; i < n; ++i) {
      w0[i] = u(gen);
      g[i] = u(gen) * 1e-2f;
    }
    // Four arrays of n floats at `gap` floats from each other in one
    // buffer, starting `shift` floats in.
    auto run = [&](size_t gap, size_t shift) {
      std::vector<float> buf(shift + 4 * (n + gap), 0.0f);
      float* w = buf.data() + shift;
      float* gr = w + n + gap;
      float* ag = gr + n + gap;
      float* av = ag + n + gap;
      std::copy(w0.begin(), w0.end(), w);
      for (int step = 0; step < 4; ++step) {
        for (size_t i = 0; i < n; ++i) gr[i] = g[i] * (1.0f + 0.25f * step);
        AdadeltaUpdate(w, gr, ag, av, n, 2.0f, 0.95f, 1e-7f);
      }
      std::vector<float> out(w, w + n);
      out.insert(out.end(), ag, ag + n);
      out.insert(out.end(), av, av + n);
      return out;
    };
    const std::vector<float> apart = run(4096, 0);
    for (size_t gap : {0u, 1u, 3u, 16u}) {
      for (size_t shift : {0u, 1u, 5u}) {
        std::vector<float> other = run(gap, shift);
        ASSERT_EQ(other.size(), apart.size());
        EXPECT_EQ(std::memcmp(other.data(), apart.data(),
                              apart.size() * sizeof(float)),
                  0)
            << "n " << n << ", gap " << gap << ", shift " << shift;
      }
    }
  }
}

TEST(KernelsTest, DropoutKeepsItsShareScaledAndRepeatsPerKey) {
  const size_t n = 200003;
  std::vector<float> in(n), out(n), mask(n), again(n), other(n);
  for (size_t i = 0; i < n; ++i) in[i] = 1.0f + static_cast<float>(i % 7);
  for (float rate : {0.25f, 0.5f}) {
    Dropout(in.data(), out.data(), mask.data(), n, rate, 42);
    size_t dropped = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(mask[i] == 0.0f || mask[i] == 1.0f / (1.0f - rate)) << i;
      ASSERT_EQ(out[i], in[i] * mask[i]);
      dropped += mask[i] == 0.0f;
    }
    // Binomial: the standard deviation of the share is about 0.001.
    EXPECT_NEAR(static_cast<double>(dropped) / n, rate, 0.006) << rate;
    Dropout(in.data(), out.data(), again.data(), n, rate, 42);
    EXPECT_EQ(again, mask);
    Dropout(in.data(), out.data(), other.data(), n, rate, 43);
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i) differ += other[i] != mask[i];
    // Independent masks disagree where exactly one drops: 2 r (1 - r).
    EXPECT_NEAR(static_cast<double>(differ) / n, 2 * rate * (1 - rate), 0.01);
    // Neighbours are independent too (no stripes from the counter).
    size_t both = 0;
    for (size_t i = 0; i + 1 < n; ++i) {
      both += mask[i] == 0.0f && mask[i + 1] == 0.0f;
    }
    EXPECT_NEAR(static_cast<double>(both) / (n - 1), rate * rate, 0.01);
  }
}

TEST(KernelsTest, ReluBackwardPassesOnlyWhereTheActivationWasPositive) {
  std::vector<float> act = {-1, 0, 2, 3, -0.5f, 4, 1, 0, 5};
  std::vector<float> diff = {1, 1, 1, 2, 2, 2, 3, 3, 3};
  std::vector<float> mask = {2, 2, 0, 2, 2, 2, 0.5f, 2, 1};
  std::vector<float> d = diff;
  ReluBackward(d.data(), nullptr, act.data(), d.size());
  EXPECT_EQ(d, (std::vector<float>{0, 0, 1, 2, 0, 2, 3, 0, 3}));
  d = diff;
  ReluBackward(d.data(), mask.data(), act.data(), d.size());
  EXPECT_EQ(d, (std::vector<float>{0, 0, 0, 4, 0, 4, 1.5f, 0, 3}));
}

TEST(ScheduleTest, WarmupRisesFromLrOverSizeToLr) {
  // Size 4, lr 4.0 (scaled), warm-up 5 epochs of 10 steps.
  EXPECT_NEAR(WarmupLr(4.0, 4, 5, 0, -1, 10), 1.0, 1e-12);  // before any batch
  EXPECT_NEAR(WarmupLr(4.0, 4, 5, 4, 9, 10), 4.0, 1e-12);   // end of warm-up
  EXPECT_NEAR(WarmupLr(4.0, 4, 5, 2, 4, 10), 1.0 * (2.5 * 3 / 5 + 1), 1e-12);
  ReduceLrOnPlateau plateau(0.5, 2);
  double lr = 1.0;
  lr = plateau.Update(1.0, lr);  // best
  lr = plateau.Update(1.0, lr);  // 1 without improvement
  EXPECT_EQ(lr, 1.0);
  lr = plateau.Update(0.99995, lr);  // below min_delta: still no improvement
  EXPECT_EQ(lr, 0.5);
  lr = plateau.Update(0.5, lr);  // improves
  EXPECT_EQ(lr, 0.5);
}

}  // namespace
}  // namespace hvd::mnist
