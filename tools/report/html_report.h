// The report as one self-contained HTML page: inline CSS, plain SVG plots (tools/report/svg_plot.h),
// no script and nothing fetched, so that it opens anywhere and reads the same offline.
#pragma once

#include <string>

#include "tools/report/report_data.h"

namespace tiletune::report {

// `source`: what the report was made from (the database path as given), shown in its heading.
std::string html_report(const ReportData& report, const std::string& source);

}  // namespace tiletune::report
