// Bayesian optimisation for --autotune, as Horovod's: a Gaussian process
// (squared-exponential kernel on inputs scaled to [0, 1], observation noise
// from --autotune-gaussian-process-noise, scores standardised) models the
// score of each configuration; the next one to try maximises the expected
// improvement over the best so far. Pure logic: no clock, no I/O; Eigen
// does the linear algebra.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace hvd::runtime {

class GaussianProcess {
 public:
  GaussianProcess(double length_scale, double noise)
      : length_(length_scale), noise_(noise) {}
  // x: points in [0, 1]^d; y: their observed values.
  void Fit(const std::vector<std::vector<double>>& x,
           const std::vector<double>& y);
  // Posterior mean and standard deviation at `x`, in y's units.
  std::pair<double, double> Predict(const std::vector<double>& x) const;

 private:
  double Kernel(const std::vector<double>& a,
                const std::vector<double>& b) const;

  double length_, noise_;
  std::vector<std::vector<double>> x_;
  std::vector<double> alpha_;  // K^-1 (y - mean) / scale
  std::vector<double> chol_;   // lower Cholesky factor of K, row-major
  double mean_ = 0, scale_ = 1;
};

// Expected improvement of N(mean, sd^2) over `best` (maximising), with an
// exploration margin xi.
double ExpectedImprovement(double mean, double sd, double best, double xi);

class BayesianOptimizer {
 public:
  // bounds: [low, high] per dimension.
  BayesianOptimizer(std::vector<std::pair<double, double>> bounds, double noise,
                    uint64_t seed = 1);
  void AddSample(const std::vector<double>& x, double score);
  // The next point to try: random points first, then the candidate with
  // the largest expected improvement.
  std::vector<double> Next();
  // The best sample so far (x, score); empty before any.
  std::pair<std::vector<double>, double> Best() const;
  size_t samples() const { return y_.size(); }

 private:
  std::vector<double> Scale(const std::vector<double>& x) const;
  std::vector<double> Unscale(const std::vector<double>& u) const;

  std::vector<std::pair<double, double>> bounds_;
  double noise_;
  std::mt19937_64 gen_;
  std::vector<std::vector<double>> x_;  // scaled
  std::vector<double> y_;
};

}  // namespace hvd::runtime
