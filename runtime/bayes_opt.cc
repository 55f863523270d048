#include "runtime/bayes_opt.h"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

namespace hvd::runtime {

double GaussianProcess::Kernel(const std::vector<double>& a,
                               const std::vector<double>& b) const {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-0.5 * d2 / (length_ * length_));
}

void GaussianProcess::Fit(const std::vector<std::vector<double>>& x,
                          const std::vector<double>& y) {
  x_ = x;
  const size_t n = y.size();
  mean_ = n ? std::accumulate(y.begin(), y.end(), 0.0) / n : 0;
  double var = 0;
  for (double v : y) var += (v - mean_) * (v - mean_);
  scale_ = n > 1 && var > 0 ? std::sqrt(var / n) : 1;
  Eigen::MatrixXd k(n, n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) k(i, j) = Kernel(x[i], x[j]);
    k(i, i) += noise_ * noise_ + 1e-9;
  }
  Eigen::VectorXd yn(n);
  for (size_t i = 0; i < n; ++i) yn(i) = (y[i] - mean_) / scale_;
  Eigen::LLT<Eigen::MatrixXd> llt(k);
  Eigen::VectorXd a = llt.solve(yn);
  alpha_.assign(a.data(), a.data() + n);
  Eigen::MatrixXd l = llt.matrixL();
  chol_.resize(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) chol_[i * n + j] = l(i, j);
}

std::pair<double, double> GaussianProcess::Predict(
    const std::vector<double>& x) const {
  const size_t n = x_.size();
  if (n == 0) return {mean_, scale_};
  Eigen::VectorXd ks(n);
  for (size_t i = 0; i < n; ++i) ks(i) = Kernel(x, x_[i]);
  double mu = 0;
  for (size_t i = 0; i < n; ++i) mu += ks(i) * alpha_[i];
  // var = k(x, x) - |L^-1 k*|^2.
  Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                 Eigen::RowMajor>>
      l(chol_.data(), n, n);
  Eigen::VectorXd v = l.triangularView<Eigen::Lower>().solve(ks);
  double var = std::max(1e-12, 1.0 - v.squaredNorm());
  return {mean_ + scale_ * mu, scale_ * std::sqrt(var)};
}

double ExpectedImprovement(double mean, double sd, double best, double xi) {
  if (sd <= 0) return std::max(0.0, mean - best - xi);
  double z = (mean - best - xi) / sd;
  double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return (mean - best - xi) * cdf + sd * pdf;
}

BayesianOptimizer::BayesianOptimizer(
    std::vector<std::pair<double, double>> bounds, double noise, uint64_t seed)
    : bounds_(std::move(bounds)), noise_(noise), gen_(seed) {}

std::vector<double> BayesianOptimizer::Scale(
    const std::vector<double>& x) const {
  std::vector<double> u(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double span = bounds_[i].second - bounds_[i].first;
    u[i] = span > 0 ? (x[i] - bounds_[i].first) / span : 0;
  }
  return u;
}

std::vector<double> BayesianOptimizer::Unscale(
    const std::vector<double>& u) const {
  std::vector<double> x(u.size());
  for (size_t i = 0; i < u.size(); ++i) {
    x[i] = bounds_[i].first + u[i] * (bounds_[i].second - bounds_[i].first);
  }
  return x;
}

void BayesianOptimizer::AddSample(const std::vector<double>& x, double score) {
  x_.push_back(Scale(x));
  y_.push_back(score);
}

std::pair<std::vector<double>, double> BayesianOptimizer::Best() const {
  if (y_.empty()) return {{}, 0};
  size_t b = std::max_element(y_.begin(), y_.end()) - y_.begin();
  return {Unscale(x_[b]), y_[b]};
}

std::vector<double> BayesianOptimizer::Next() {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const size_t d = bounds_.size();
  auto random_point = [&] {
    std::vector<double> p(d);
    for (double& v : p) v = u(gen_);
    return p;
  };
  // A few random points before the model has anything to say.
  if (y_.size() < 3) return Unscale(random_point());
  GaussianProcess gp(0.25, noise_);
  gp.Fit(x_, y_);
  const double best = *std::max_element(y_.begin(), y_.end());
  std::vector<double> arg = random_point();
  double top = -1;
  auto consider = [&](const std::vector<double>& p) {
    auto [mu, sd] = gp.Predict(p);
    double ei = ExpectedImprovement(mu, sd, best, 0.01 * std::abs(best));
    if (ei > top) {
      top = ei;
      arg = p;
    }
  };
  for (int i = 0; i < 2000; ++i) consider(random_point());
  // Refine around the winner.
  std::normal_distribution<double> step(0.0, 0.02);
  for (int i = 0; i < 500; ++i) {
    std::vector<double> p = arg;
    for (double& v : p) v = std::clamp(v + step(gen_), 0.0, 1.0);
    consider(p);
  }
  return Unscale(arg);
}

}  // namespace hvd::runtime
