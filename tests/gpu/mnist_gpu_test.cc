// train_mnist's GPU path against its CPU path: the same parameters and
// images (dropout off) must give the same loss and gradients on cuDNN and
// cuBLAS as on oneDNN. Skips with the reason where no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "mnist/idx.h"
#include "mnist/model.h"

namespace hvd::mnist {
namespace {

TEST(MnistGpuTest, CudnnMatchesOneDnn) {
  if (VisibleGpus() == 0) {
    GTEST_SKIP() << "no GPU visible (or built without CUDA and cuDNN)";
  }
  // The digits where the source tree was built, unless moved (a bundle
  // run on another machine says where they are).
  const char* moved = std::getenv("HVD_MNIST_DATA");
  auto data = ReadIdxPair(moved ? moved : HVD_MNIST_DATA, "t10k");
  ASSERT_TRUE(data.ok());
  const int n = 32;
  std::vector<float> x(n * 784);
  for (size_t i = 0; i < x.size(); ++i) x[i] = data->pixels[i] / 255.0f;
  Model cpu(3);
  auto gpu = Model::Create(3, 0);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  cpu.set_dropout(false);
  (*gpu)->set_dropout(false);
  auto a = cpu.Forward(x.data(), data->labels.data(), n, true);
  auto b = (*gpu)->Forward(x.data(), data->labels.data(), n, true);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
  EXPECT_NEAR(a->loss, b->loss, 1e-4 * std::abs(a->loss));
  EXPECT_EQ(a->correct, b->correct);
  ASSERT_TRUE(cpu.Backward().ok());
  ASSERT_TRUE((*gpu)->Backward().ok());
  for (size_t k = 0; k < cpu.params().size(); ++k) {
    const auto& g1 = cpu.params()[k].grad;
    const auto& g2 = (*gpu)->params()[k].grad;
    double norm = 0, diff = 0;
    for (size_t i = 0; i < g1.size(); ++i) {
      norm += g1[i] * g1[i];
      diff += (g1[i] - g2[i]) * (g1[i] - g2[i]);
    }
    EXPECT_LT(std::sqrt(diff), 1e-3 * std::sqrt(norm) + 1e-7)
        << cpu.params()[k].name;
  }
}

}  // namespace
}  // namespace hvd::mnist
