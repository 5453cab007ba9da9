// A Gaussian-process regression, the surrogate model of the bayes strategy: from the times
// observed so far, a prediction (mean and uncertainty) for every configuration not evaluated yet.
//
// Inputs are points in [0, 1]^d (each parameter's value index scaled to that range); targets are
// standardised to mean 0 and variance 1 before fitting. The kernel is Matern 5/2 with one length
// scale per input dimension (automatic relevance determination: a parameter whose value hardly
// matters gets a long scale), plus a noise term for what the model cannot explain (timing noise,
// interactions too sharp for it). The scales and the noise are picked from small grids by
// coordinate ascent on the log marginal likelihood, which is cheap at the sizes a search sees.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>

namespace tiletune {

struct GpHyperparameters {
  Eigen::VectorXd length_scales;  // one per input dimension
  double noise_variance = 0;      // a share of the standardised targets' variance
};

struct GpPrediction {
  double mean = 0;    // in the targets' units
  double stddev = 0;  // of the latent function, without the noise
};

class GaussianProcess {
 public:
  // inputs: one row per observation; targets: one value each. Throws std::invalid_argument when
  // there is no observation or the sizes differ.
  GaussianProcess(Eigen::MatrixXd inputs, Eigen::VectorXd targets);
  // With given hyperparameters instead of fitted ones (those of an earlier fit to fewer points):
  // fitting them is most of a model's cost. Throws std::invalid_argument also when they do not
  // have one length scale per input dimension.
  GaussianProcess(Eigen::MatrixXd inputs, Eigen::VectorXd targets, const GpHyperparameters& hyperparameters);

  GpPrediction predict(const Eigen::VectorXd& input) const;

  // Adds an observation without refitting the hyperparameters: for a batch chosen one point at a
  // time, each assumed to come out as predicted ("kriging believer").
  void add(const Eigen::VectorXd& input, double target);

  GpHyperparameters hyperparameters() const { return {length_scales_, noise_variance_}; }

 private:
  double covariance(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const;
  // Factorises the inputs' covariance with the current hyperparameters; false when it is not
  // positive definite.
  bool factorize();
  // The log marginal likelihood with the current hyperparameters (-infinity when the covariance
  // cannot be factorised).
  double log_likelihood();
  void standardize_targets();
  void fit_hyperparameters();

  Eigen::MatrixXd inputs_;
  Eigen::VectorXd targets_;  // standardised
  double target_mean_ = 0;
  double target_scale_ = 1;
  Eigen::VectorXd length_scales_;
  double noise_variance_ = 0;
  Eigen::LLT<Eigen::MatrixXd> cholesky_;
  Eigen::VectorXd weights_;  // K^-1 y
};

}  // namespace tiletune
