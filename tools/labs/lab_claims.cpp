#include "tools/labs/lab_claims.h"

#include <algorithm>

#include <fmt/format.h>


namespace tiletune::labs {

Claim judged(std::string statement, bool holds, std::string measured) {
  return {std::move(statement), holds ? Verdict::kConfirmed : Verdict::kRefuted,
          std::move(measured)};
}

Claim not_measured(std::string statement, std::string why) {
  return {std::move(statement), Verdict::kNotMeasured, std::move(why)};
}

Claim reported(std::string statement, std::string measured) {
  return {std::move(statement), Verdict::kReported, std::move(measured)};
}

std::string verdict_text(const Claim& claim) {
  switch (claim.verdict) {
    case Verdict::kConfirmed:
      return "confirmed";
    case Verdict::kRefuted:
      return "REFUTED";
    case Verdict::kNotMeasured:
      return "not measured: " + claim.measured;
    case Verdict::kReported:
      return "reported";
  }
  return "?";
}

std::string counter_cell(std::optional<double> value) {
  return value ? fmt::format("{:.0f}", *value) : "-";
}

std::string format_claims_table(const std::vector<Claim>& claims) {
  std::size_t statement_width = std::string("claim").size();
  std::size_t verdict_width = std::string("verdict").size();
  for (const Claim& claim : claims) {
    statement_width = std::max(statement_width, claim.statement.size());
    if (claim.verdict != Verdict::kNotMeasured) {
      verdict_width = std::max(verdict_width, verdict_text(claim).size());
    }
  }
  std::string table = fmt::format("{:<{}}  {:<{}}  {}\n", "claim", statement_width, "verdict",
                                  verdict_width, "measured");
  for (const Claim& claim : claims) {
    // A missing measurement has only its reason to show: it takes the verdict and measured columns.
    if (claim.verdict == Verdict::kNotMeasured) {
      table += fmt::format("{:<{}}  {}\n", claim.statement, statement_width, verdict_text(claim));
    } else {
      table += fmt::format("{:<{}}  {:<{}}  {}\n", claim.statement, statement_width,
                           verdict_text(claim), verdict_width, claim.measured);
    }
  }
  return table;
}

int claims_exit_code(const std::vector<Claim>& claims) {
  const bool refuted = std::any_of(claims.begin(), claims.end(),
                                   [](const Claim& c) { return c.verdict == Verdict::kRefuted; });
  return refuted ? 1 : 0;  // tiletune's exit codes: findings, success
}

nlohmann::json claims_json(const std::vector<Claim>& claims) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Claim& claim : claims) {
    const char* verdict = claim.verdict == Verdict::kConfirmed  ? "confirmed"
                          : claim.verdict == Verdict::kRefuted  ? "refuted"
                          : claim.verdict == Verdict::kReported ? "reported"
                                                                : "not measured";
    nlohmann::json row = {{"claim", claim.statement}, {"verdict", verdict}};
    row[claim.verdict == Verdict::kNotMeasured ? "why" : "measured"] = claim.measured;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace tiletune::labs
