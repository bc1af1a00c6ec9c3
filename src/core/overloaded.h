// Overloaded{lambdas...}: one visitor out of several lambdas, for std::visit over the engine's
// command and event variants (dispatch on types, not strings).
#pragma once

namespace arbiter {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace arbiter
