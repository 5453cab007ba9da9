// The bayes strategy's surrogate (tuner/search/gaussian_process.h): it interpolates what it was
// fitted to, knows where it knows little, finds which inputs matter, and takes believed points.
#include "tuner/search/gaussian_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace tiletune {
namespace {

// A smooth function of the first input only; the second is noise-free but irrelevant.
double smooth(double x) { return std::sin(3 * x) + 0.5 * x; }

GaussianProcess fitted_to_a_grid() {
  const int n = 9;
  Eigen::MatrixXd inputs(n * 3, 2);
  Eigen::VectorXd targets(n * 3);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 3; ++j) {
      inputs.row(i * 3 + j) << double(i) / (n - 1), double(j) / 2;
      targets(i * 3 + j) = 10 + smooth(double(i) / (n - 1));  // an offset the standardisation removes
    }
  }
  return GaussianProcess(inputs, targets);
}

TEST(GaussianProcess, PredictsBetweenTheObservationsOfASmoothFunction) {
  const GaussianProcess model = fitted_to_a_grid();
  for (const double x : {0.06, 0.31, 0.5, 0.69, 0.94}) {
    Eigen::VectorXd at(2);
    at << x, 0.25;
    const GpPrediction prediction = model.predict(at);
    EXPECT_NEAR(prediction.mean, 10 + smooth(x), 0.05) << "at " << x;
    EXPECT_LT(prediction.stddev, 0.1) << "at " << x;
  }
}

TEST(GaussianProcess, IsUnsureFarFromTheObservations) {
  const GaussianProcess model = fitted_to_a_grid();
  Eigen::VectorXd inside(2), outside(2);
  inside << 0.5, 0.5;
  outside << 3.0, 0.5;
  EXPECT_GT(model.predict(outside).stddev, 5 * model.predict(inside).stddev);
}

TEST(GaussianProcess, GivesAnIrrelevantInputALongerLengthScale) {
  const GaussianProcess model = fitted_to_a_grid();
  EXPECT_GT(model.hyperparameters().length_scales(1), 2 * model.hyperparameters().length_scales(0));
}

TEST(GaussianProcess, ABelievedPointLowersTheUncertaintyThere) {
  GaussianProcess model = fitted_to_a_grid();
  Eigen::VectorXd far(2);
  far << 1.6, 0.0;
  const GpPrediction before = model.predict(far);
  const Eigen::VectorXd scales = model.hyperparameters().length_scales;
  model.add(far, before.mean);
  EXPECT_LT(model.predict(far).stddev, before.stddev / 3);
  EXPECT_NEAR(model.predict(far).mean, before.mean, 1e-3);
  EXPECT_EQ(model.hyperparameters().length_scales, scales) << "no refit";
}

TEST(GaussianProcess, GivenHyperparametersAreKeptAndPredictLikeTheFittedOnes) {
  const GaussianProcess fitted = fitted_to_a_grid();
  Eigen::MatrixXd inputs(3, 2);
  inputs << 0, 0, 0.5, 0, 1, 0;
  Eigen::VectorXd targets(3);
  targets << smooth(0), smooth(0.5), smooth(1);
  const GaussianProcess given(inputs, targets, fitted.hyperparameters());
  EXPECT_EQ(given.hyperparameters().length_scales, fitted.hyperparameters().length_scales);
  EXPECT_EQ(given.hyperparameters().noise_variance, fitted.hyperparameters().noise_variance);
  Eigen::VectorXd at(2);
  at << 0.5, 0;
  EXPECT_NEAR(given.predict(at).mean, smooth(0.5), 0.1);
  EXPECT_THROW(GaussianProcess(inputs, targets, GpHyperparameters{Eigen::VectorXd::Ones(3), 0.01}),
               std::invalid_argument);
}

TEST(GaussianProcess, NeedsOneTargetPerInputAndAtLeastOne) {
  EXPECT_THROW(GaussianProcess(Eigen::MatrixXd(0, 2), Eigen::VectorXd(0)), std::invalid_argument);
  EXPECT_THROW(GaussianProcess(Eigen::MatrixXd::Zero(3, 2), Eigen::VectorXd::Zero(2)), std::invalid_argument);
}

TEST(GaussianProcess, ConstantTargetsArePredictedAsThemselves) {
  Eigen::MatrixXd inputs(3, 1);
  inputs << 0, 0.5, 1;
  const GaussianProcess model(inputs, Eigen::VectorXd::Constant(3, 2.5));
  Eigen::VectorXd at(1);
  at << 0.25;
  EXPECT_NEAR(model.predict(at).mean, 2.5, 1e-9);
}

}  // namespace
}  // namespace tiletune
