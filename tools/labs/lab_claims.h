// What a lab concludes: each claim of the tutorials, what this GPU measured, and the verdict.
//
// A claim is confirmed or refuted only by a measurement; one whose counters could not be read is
// "not measured" with the reason, never confirmed. Some rows state a measurement the tutorials
// make no firm claim about (sectors, DRAM bytes): "reported", judged by nobody.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tiletune::labs {

enum class Verdict { kConfirmed, kRefuted, kNotMeasured, kReported };

struct Claim {
  std::string statement;  // "stride 1: no excessive shared wavefronts"
  Verdict verdict = Verdict::kNotMeasured;
  std::string measured;  // the numbers behind the verdict, or why nothing was measured
};

// Confirmed when the measurement `holds`, refuted when not; not measured with a reason; reported.
Claim judged(std::string statement, bool holds, std::string measured);
Claim not_measured(std::string statement, std::string why);
Claim reported(std::string statement, std::string measured);

// "confirmed", "REFUTED", "not measured: <why>", "reported".
std::string verdict_text(const Claim& claim);

// A counter's value in a lab's table: a whole number, "-" where it was not read.
std::string counter_cell(std::optional<double> value);

// The claims as an aligned text table: claim, verdict, measured; ends with a newline.
std::string format_claims_table(const std::vector<Claim>& claims);

// 1 (tiletune's exit code for findings) when any claim is refuted, else 0.
int claims_exit_code(const std::vector<Claim>& claims);

nlohmann::json claims_json(const std::vector<Claim>& claims);

}  // namespace tiletune::labs
