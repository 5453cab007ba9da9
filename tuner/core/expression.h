// Integer expressions of a template's declarations: constraints ("require") and launch geometry
// ("block", "grid", "shared") are written in this small language over the template's parameters
// and the problem sizes M, N, K.
//
// Grammar (C precedence, 64-bit signed integers, no side effects):
//   expr    := ternary
//   ternary := or ('?' expr ':' expr)?
//   or      := and ('||' and)*          and := cmp ('&&' cmp)*
//   cmp     := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)*
//   sum     := product (('+'|'-') product)*
//   product := unary (('*'|'/'|'%') unary)*
//   unary   := ('-'|'!'|'+') unary | primary
//   primary := integer | name | name '(' expr (',' expr)* ')' | '(' expr ')'
// Functions: min(a, b), max(a, b), ceil_div(a, b), round_up(a, b), is_pow2(a).
// Booleans are 0 and 1; '/' and '%' truncate toward zero as in C.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

using Bindings = std::map<std::string, std::int64_t, std::less<>>;

// A syntax error (at parse time) or an evaluation error (unknown name, division by zero,
// overflow) with the expression's text in its message.
class ExpressionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Expression {
 public:
  struct Node;  // the parsed tree; defined in expression.cpp

  // Throws ExpressionError on a syntax error, an unknown function or a wrong argument count.
  static Expression parse(std::string_view text);

  // Throws ExpressionError when a name is unbound, on division by zero or on overflow.
  std::int64_t evaluate(const Bindings& bindings) const;

  // Every variable name the expression reads (function names excluded).
  const std::set<std::string>& names() const { return names_; }
  bool references(std::string_view name) const { return names_.count(std::string(name)) > 0; }

  const std::string& text() const { return text_; }

  // The operands of a top-level chain of '&&' ("M % 8 == 0 && lda % 4 == 0" gives two), or the
  // expression itself; each keeps the whole expression's text for messages. The expression is
  // non-zero exactly when every conjunct is.
  std::vector<Expression> conjuncts() const;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
  std::set<std::string> names_;
};

}  // namespace tiletune
