// A lab asked for something it does not have (a kernel or size by a name it does not know): the
// command line reports it as bad input (exit 2).
#pragma once

#include <stdexcept>

namespace tiletune::labs {

class LabArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace tiletune::labs
