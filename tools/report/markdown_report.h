// The report's content as Markdown tables (no plots), for a terminal: `tiletune report --format md`.
#pragma once

#include <string>

#include "tools/report/report_data.h"

namespace tiletune::report {

std::string markdown_report(const ReportData& report, const std::string& source);

}  // namespace tiletune::report
