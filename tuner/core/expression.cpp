#include "tuner/core/expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <vector>

namespace tiletune {

struct Expression::Node {
  enum class Op {
    Number,
    Name,
    Negate,
    Not,
    Ternary,
    Or,
    And,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Min,
    Max,
    CeilDiv,
    RoundUp,
    IsPow2
  };

  Op op = Op::Number;
  std::int64_t value = 0;  // Number
  std::string name;        // Name, or the function's name for a call
  std::size_t column = 0;  // 1-based position of the token, for messages
  std::vector<std::shared_ptr<const Node>> operands;
};

namespace {

using Node = Expression::Node;
using NodePtr = std::shared_ptr<const Node>;
using NodeOp = Node::Op;

struct Function {
  std::string_view name;
  NodeOp op;
  std::size_t arity;
};

constexpr Function kFunctions[] = {
    {"min", NodeOp::Min, 2},          {"max", NodeOp::Max, 2},        {"ceil_div", NodeOp::CeilDiv, 2},
    {"round_up", NodeOp::RoundUp, 2}, {"is_pow2", NodeOp::IsPow2, 1},
};

struct BinaryOperator {
  std::string_view symbol;
  NodeOp op;
};

// One row per precedence level of the grammar, loosest first; all are left-associative.
const std::vector<std::vector<BinaryOperator>> kBinaryLevels = {
    {{"||", NodeOp::Or}},
    {{"&&", NodeOp::And}},
    {{"==", NodeOp::Equal},
     {"!=", NodeOp::NotEqual},
     {"<", NodeOp::Less},
     {"<=", NodeOp::LessEqual},
     {">", NodeOp::Greater},
     {">=", NodeOp::GreaterEqual}},
    {{"+", NodeOp::Add}, {"-", NodeOp::Subtract}},
    {{"*", NodeOp::Multiply}, {"/", NodeOp::Divide}, {"%", NodeOp::Modulo}},
};

// Deep enough for any real declaration, shallow enough that hostile input cannot exhaust the stack.
constexpr int kMaxNesting = 200;

struct Token {
  enum class Kind { Number, Name, Symbol, End };
  Kind kind = Kind::End;
  std::string_view text;
  std::size_t column = 0;
};

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Parser {
 public:
  Parser(std::string_view text, std::set<std::string>& names) : text_(text), names_(names) {
    tokenize();
  }

  NodePtr parse() {
    NodePtr root = expr();
    if (current().kind != Token::Kind::End) fail_at(current(), "expected an operator");
    return root;
  }

 private:
  [[noreturn]] void fail(std::size_t column, std::string_view why) const {
    throw ExpressionError(
        fmt::format("invalid expression '{}': {} at column {}", text_, why, column));
  }

  [[noreturn]] void fail_at(const Token& token, std::string_view expected) const {
    const std::string found = token.kind == Token::Kind::End ? std::string("end of expression")
                                                             : fmt::format("'{}'", token.text);
    fail(token.column, fmt::format("{}, found {}", expected, found));
  }

  void tokenize() {
    constexpr std::string_view kTwoCharSymbols[] = {"||", "&&", "==", "!=", "<=", ">="};
    constexpr std::string_view kOneCharSymbols = "+-*/%!<>?:(),";
    std::size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      const std::size_t start = i;
      Token::Kind kind = Token::Kind::Symbol;
      if (c == ' ' || c == '\t') {
        ++i;
        continue;
      }
      if (is_digit(c)) {
        kind = Token::Kind::Number;
        while (i < text_.size() && is_digit(text_[i])) ++i;
      } else if (is_name_start(c)) {
        kind = Token::Kind::Name;
        while (i < text_.size() && is_name_char(text_[i])) ++i;
      } else {
        for (std::string_view symbol : kTwoCharSymbols) {
          if (text_.substr(i).starts_with(symbol)) i += 2;
        }
        if (i == start && kOneCharSymbols.find(c) != std::string_view::npos) ++i;
        if (i == start) {
          if (c == '&' || c == '|' || c == '=') {
            fail(i + 1, fmt::format("unexpected character '{}' (did you mean '{}{}'?)", c, c, c));
          }
          fail(i + 1, fmt::format("unexpected character '{}'", c));
        }
      }
      tokens_.push_back({kind, text_.substr(start, i - start), start + 1});
    }
    tokens_.push_back({Token::Kind::End, {}, text_.size() + 1});
  }

  const Token& current() const { return tokens_[pos_]; }
  bool at_symbol(std::string_view symbol) const {
    return current().kind == Token::Kind::Symbol && current().text == symbol;
  }
  void expect(std::string_view symbol) {
    if (!at_symbol(symbol)) fail_at(current(), fmt::format("expected '{}'", symbol));
    ++pos_;
  }

  // Counts recursion through expr() and unary(), the only ways to nest.
  struct NestingGuard {
    Parser& parser;
    explicit NestingGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxNesting) parser.fail(p.current().column, "nested too deeply");
    }
    ~NestingGuard() { --parser.depth_; }
  };

  static std::shared_ptr<Node> make(NodeOp op, std::size_t column, std::vector<NodePtr> operands) {
    auto node = std::make_shared<Node>();
    node->op = op;
    node->column = column;
    node->operands = std::move(operands);
    return node;
  }

  NodePtr expr() {
    NestingGuard guard(*this);
    NodePtr condition = binary(0);
    if (!at_symbol("?")) return condition;
    const std::size_t column = current().column;
    ++pos_;
    NodePtr if_true = expr();
    expect(":");
    NodePtr if_false = expr();
    return make(NodeOp::Ternary, column, {condition, if_true, if_false});
  }

  NodePtr binary(std::size_t level) {
    if (level == kBinaryLevels.size()) return unary();
    NodePtr lhs = binary(level + 1);
    for (;;) {
      const BinaryOperator* match = nullptr;
      for (const BinaryOperator& candidate : kBinaryLevels[level]) {
        if (at_symbol(candidate.symbol)) match = &candidate;
      }
      if (match == nullptr) return lhs;
      const std::size_t column = current().column;
      ++pos_;
      lhs = make(match->op, column, {lhs, binary(level + 1)});
    }
  }

  NodePtr unary() {
    NestingGuard guard(*this);
    const std::size_t column = current().column;
    if (at_symbol("-")) {
      ++pos_;
      return make(NodeOp::Negate, column, {unary()});
    }
    if (at_symbol("!")) {
      ++pos_;
      return make(NodeOp::Not, column, {unary()});
    }
    if (at_symbol("+")) {
      ++pos_;
      return unary();
    }
    return primary();
  }

  NodePtr primary() {
    const Token token = current();
    if (token.kind == Token::Kind::Number) {
      ++pos_;
      auto node = std::make_shared<Node>();
      node->column = token.column;
      const auto [end, error] =
          std::from_chars(token.text.data(), token.text.data() + token.text.size(), node->value);
      if (error != std::errc{}) {
        fail(token.column, fmt::format("integer '{}' does not fit in 64 bits", token.text));
      }
      return node;
    }
    if (token.kind == Token::Kind::Name) {
      ++pos_;
      if (at_symbol("(")) return call(token);
      auto node = std::make_shared<Node>();
      node->op = NodeOp::Name;
      node->name = std::string(token.text);
      node->column = token.column;
      names_.insert(node->name);
      return node;
    }
    if (at_symbol("(")) {
      ++pos_;
      NodePtr inner = expr();
      expect(")");
      return inner;
    }
    fail_at(token, "expected a number, a name or '('");
  }

  NodePtr call(const Token& name) {
    const Function* function = nullptr;
    for (const Function& candidate : kFunctions) {
      if (candidate.name == name.text) function = &candidate;
    }
    if (function == nullptr) {
      fail(name.column, fmt::format("unknown function '{}' (known: min, max, ceil_div, round_up, "
                                    "is_pow2)",
                                    name.text));
    }
    expect("(");
    std::vector<NodePtr> arguments{expr()};
    while (at_symbol(",")) {
      ++pos_;
      arguments.push_back(expr());
    }
    expect(")");
    if (arguments.size() != function->arity) {
      fail(name.column, fmt::format("{}() takes {} argument{}, got {}", name.text, function->arity,
                                    function->arity == 1 ? "" : "s", arguments.size()));
    }
    auto node = make(function->op, name.column, std::move(arguments));
    node->name = std::string(name.text);
    return node;
  }

  std::string_view text_;
  std::set<std::string>& names_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

class Evaluator {
 public:
  Evaluator(std::string_view text, const Bindings& bindings) : text_(text), bindings_(bindings) {}

  std::int64_t evaluate(const Node& node) const {
    const auto operand = [&](std::size_t i) { return evaluate(*node.operands[i]); };
    switch (node.op) {
      case NodeOp::Number:
        return node.value;
      case NodeOp::Name: {
        const auto found = bindings_.find(node.name);
        if (found == bindings_.end()) {
          fail(node.column, fmt::format("unknown name '{}'", node.name));
        }
        return found->second;
      }
      case NodeOp::Negate:
        return arithmetic(node, Arithmetic::Subtract, 0, operand(0));
      case NodeOp::Not:
        return operand(0) == 0;
      case NodeOp::Ternary:
        return operand(0) != 0 ? operand(1) : operand(2);
      // && and || short-circuit as in C, so "N != 0 && K / N > 1" is safe.
      case NodeOp::Or:
        return operand(0) != 0 || operand(1) != 0;
      case NodeOp::And:
        return operand(0) != 0 && operand(1) != 0;
      case NodeOp::Equal:
        return operand(0) == operand(1);
      case NodeOp::NotEqual:
        return operand(0) != operand(1);
      case NodeOp::Less:
        return operand(0) < operand(1);
      case NodeOp::LessEqual:
        return operand(0) <= operand(1);
      case NodeOp::Greater:
        return operand(0) > operand(1);
      case NodeOp::GreaterEqual:
        return operand(0) >= operand(1);
      case NodeOp::Add:
        return arithmetic(node, Arithmetic::Add, operand(0), operand(1));
      case NodeOp::Subtract:
        return arithmetic(node, Arithmetic::Subtract, operand(0), operand(1));
      case NodeOp::Multiply:
        return arithmetic(node, Arithmetic::Multiply, operand(0), operand(1));
      case NodeOp::Divide:
        return divide(node, operand(0), operand(1));
      case NodeOp::Modulo: {
        const std::int64_t a = operand(0), b = operand(1);
        if (b == 0) fail(node.column, "modulo by zero");
        return b == -1 ? 0 : a % b;  // INT64_MIN % -1 traps in hardware; the answer is 0
      }
      case NodeOp::Min:
        return std::min(operand(0), operand(1));
      case NodeOp::Max:
        return std::max(operand(0), operand(1));
      case NodeOp::CeilDiv:
        return ceil_div(node, operand(0), operand(1));
      case NodeOp::RoundUp: {
        const std::int64_t b = operand(1);
        return arithmetic(node, Arithmetic::Multiply, ceil_div(node, operand(0), b), b);
      }
      case NodeOp::IsPow2: {
        const std::int64_t a = operand(0);
        return a > 0 && (a & (a - 1)) == 0;
      }
    }
    fail(node.column, "unsupported operation");
  }

 private:
  [[noreturn]] void fail(std::size_t column, std::string_view why) const {
    throw ExpressionError(fmt::format("cannot evaluate '{}': {} at column {}", text_, why, column));
  }

  enum class Arithmetic { Add, Subtract, Multiply };

  std::int64_t arithmetic(const Node& node, Arithmetic kind, std::int64_t a, std::int64_t b) const {
    std::int64_t result = 0;
    bool overflowed = false;
    switch (kind) {
      case Arithmetic::Add:
        overflowed = __builtin_add_overflow(a, b, &result);
        break;
      case Arithmetic::Subtract:
        overflowed = __builtin_sub_overflow(a, b, &result);
        break;
      case Arithmetic::Multiply:
        overflowed = __builtin_mul_overflow(a, b, &result);
        break;
    }
    if (overflowed) fail(node.column, "64-bit overflow");
    return result;
  }

  std::int64_t divide(const Node& node, std::int64_t a, std::int64_t b) const {
    if (b == 0) fail(node.column, "division by zero");
    if (a == std::numeric_limits<std::int64_t>::min() && b == -1) {
      fail(node.column, "64-bit overflow");
    }
    return a / b;
  }

  // The mathematical ceiling of a / b, for either sign.
  std::int64_t ceil_div(const Node& node, std::int64_t a, std::int64_t b) const {
    const std::int64_t quotient = divide(node, a, b);
    const std::int64_t remainder = a % b;
    const bool positive_fraction = remainder != 0 && ((remainder > 0) == (b > 0));
    return positive_fraction ? quotient + 1 : quotient;
  }

  std::string_view text_;
  const Bindings& bindings_;
};

}  // namespace

Expression Expression::parse(std::string_view text) {
  Expression expression;
  expression.text_ = std::string(text);
  expression.root_ = Parser(expression.text_, expression.names_).parse();
  return expression;
}

namespace {

void collect_conjuncts(const NodePtr& node, std::vector<NodePtr>& out) {
  if (node->op != NodeOp::And) {
    out.push_back(node);
    return;
  }
  for (const NodePtr& operand : node->operands) collect_conjuncts(operand, out);
}

void collect_names(const Node& node, std::set<std::string>& names) {
  if (node.op == NodeOp::Name) names.insert(node.name);
  for (const NodePtr& operand : node.operands) collect_names(*operand, names);
}

}  // namespace

std::vector<Expression> Expression::conjuncts() const {
  if (!root_) return {*this};
  std::vector<NodePtr> nodes;
  collect_conjuncts(root_, nodes);
  std::vector<Expression> parts;
  for (const NodePtr& node : nodes) {
    Expression part;
    part.text_ = text_;
    part.root_ = node;
    collect_names(*node, part.names_);
    parts.push_back(std::move(part));
  }
  return parts;
}

std::int64_t Expression::evaluate(const Bindings& bindings) const {
  if (!root_) throw ExpressionError("cannot evaluate an empty expression");
  return Evaluator(text_, bindings).evaluate(*root_);
}

}  // namespace tiletune
