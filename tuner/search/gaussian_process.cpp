#include "tuner/search/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <utility>

namespace tiletune {
namespace {

// Grids the hyperparameters are picked from. Inputs span [0, 1], so a scale of 0.15 lets
// adjacent values of a 4-valued parameter differ freely and one of 5 makes the parameter all but
// irrelevant. The noise is a share of the targets' variance.
constexpr double kLengthScales[] = {0.15, 0.3, 0.6, 1.2, 2.5, 5.0};
constexpr double kNoiseVariances[] = {0.001, 0.01, 0.05, 0.2};
constexpr double kStartLengthScale = 0.6;
constexpr double kStartNoiseVariance = 0.01;
constexpr int kSweeps = 2;

}  // namespace

GaussianProcess::GaussianProcess(Eigen::MatrixXd inputs, Eigen::VectorXd targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  standardize_targets();
  length_scales_ = Eigen::VectorXd::Constant(inputs_.cols(), kStartLengthScale);
  noise_variance_ = kStartNoiseVariance;
  fit_hyperparameters();
}

GaussianProcess::GaussianProcess(Eigen::MatrixXd inputs, Eigen::VectorXd targets,
                                 const GpHyperparameters& hyperparameters)
    : inputs_(std::move(inputs)), targets_(std::move(targets)),
      length_scales_(hyperparameters.length_scales), noise_variance_(hyperparameters.noise_variance) {
  if (length_scales_.size() != inputs_.cols()) {
    throw std::invalid_argument("a Gaussian process needs one length scale per input dimension");
  }
  standardize_targets();
  if (!factorize()) throw std::runtime_error("Gaussian process: the covariance is not positive definite");
}

void GaussianProcess::standardize_targets() {
  if (inputs_.rows() == 0 || inputs_.rows() != targets_.size()) {
    throw std::invalid_argument("a Gaussian process needs one target per input, and at least one");
  }
  target_mean_ = targets_.mean();
  const double variance = (targets_.array() - target_mean_).square().mean();
  target_scale_ = variance > 0 ? std::sqrt(variance) : 1.0;
  targets_ = (targets_.array() - target_mean_) / target_scale_;
}

double GaussianProcess::covariance(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const {
  const double s = std::sqrt(5.0) * ((a - b).array() / length_scales_.array()).matrix().norm();
  return (1 + s + s * s / 3) * std::exp(-s);
}

bool GaussianProcess::factorize() {
  const Eigen::Index n = inputs_.rows();
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < i; ++j) k(i, j) = k(j, i) = covariance(inputs_.row(i), inputs_.row(j));
    k(i, i) = 1 + noise_variance_;
  }
  cholesky_.compute(k);
  if (cholesky_.info() != Eigen::Success) return false;
  weights_ = cholesky_.solve(targets_);
  return true;
}

double GaussianProcess::log_likelihood() {
  if (!factorize()) return -std::numeric_limits<double>::infinity();
  const double log_determinant = 2 * cholesky_.matrixLLT().diagonal().array().log().sum();
  return -0.5 * targets_.dot(weights_) - 0.5 * log_determinant -
         0.5 * double(targets_.size()) * std::log(2 * std::numbers::pi);
}

void GaussianProcess::fit_hyperparameters() {
  double best = log_likelihood();
  const auto try_value = [&](double& hyperparameter, double value) {
    const double kept = hyperparameter;
    hyperparameter = value;
    const double likelihood = log_likelihood();
    if (likelihood > best) {
      best = likelihood;
    } else {
      hyperparameter = kept;
    }
  };
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    for (Eigen::Index d = 0; d < length_scales_.size(); ++d) {
      for (const double scale : kLengthScales) try_value(length_scales_(d), scale);
    }
    for (const double noise : kNoiseVariances) try_value(noise_variance_, noise);
  }
  // With the values kept, not the last ones tried; the noise keeps the covariance positive definite.
  if (!factorize()) throw std::runtime_error("Gaussian process: the covariance is not positive definite");
}

GpPrediction GaussianProcess::predict(const Eigen::VectorXd& input) const {
  Eigen::VectorXd cross(inputs_.rows());
  for (Eigen::Index i = 0; i < inputs_.rows(); ++i) cross(i) = covariance(input, inputs_.row(i));
  const double mean = cross.dot(weights_);
  const double variance = std::max(0.0, 1.0 - cholesky_.matrixL().solve(cross).squaredNorm());
  return {target_mean_ + target_scale_ * mean, target_scale_ * std::sqrt(variance)};
}

void GaussianProcess::add(const Eigen::VectorXd& input, double target) {
  const Eigen::Index n = inputs_.rows();
  inputs_.conservativeResize(n + 1, Eigen::NoChange);
  inputs_.row(n) = input;
  targets_.conservativeResize(n + 1);
  targets_(n) = (target - target_mean_) / target_scale_;
  if (!factorize()) throw std::runtime_error("Gaussian process: the covariance is not positive definite");
}

}  // namespace tiletune
