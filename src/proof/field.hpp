#pragma once
// A proof's parameters, each declared once and bound to the member of the
// proof's typed struct it fills:
//
//   field(&Lemma1Params::heads, {.name = "heads", .help = "N_h", .minimum = 1})
//
// The member's type gives the parameter's kind (integer, number, boolean,
// string, [a, b] pair, "auto" or a pair), its default is a value of that
// type, and a string parameter naming one of a few values of an enum lists
// them in `named`. make_proof derives the ParamSpecs the loader checks every
// case against, the defaults and the typed reads from these declarations, so
// a proof's `parse` shrinks to its checks across keys. A group of fields
// declared once for many proofs (the convolution's shape and geometry, dtype,
// seed) is a Field with several keys: its read sees every checked parameter.
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "proof/params.hpp"

namespace attnconv {

// The keys a field declares and how their checked values fill a `P`. `read`
// gets every checked parameter of the case (defaults filled in) and throws
// ParamError naming the key for what a single key's check cannot see.
template <class P> struct Field {
  std::vector<ParamSpec> specs;
  std::function<void(const json& params, P& p)> read;
};

// "auto" or an [a, b] pair (ParamKind::int_pair_or_auto): `size` is empty for "auto".
struct AutoPair {
  std::optional<std::array<int, 2>> size;
  bool operator==(const AutoPair&) const = default;
};

// How a member's type is read and written as a JSON parameter value.
template <class M> struct FieldValue;
template <class M>
  requires(std::is_integral_v<M> && !std::is_same_v<M, bool>)
struct FieldValue<M> {
  static constexpr ParamKind kind = ParamKind::integer;
  static M read(const json& v) { return M(v.get<long long>()); }
  static json write(M v) { return v; }
};
template <> struct FieldValue<double> {
  static constexpr ParamKind kind = ParamKind::number;
  static double read(const json& v) { return v.get<double>(); }
  static json write(double v) { return v; }
};
template <> struct FieldValue<bool> {
  static constexpr ParamKind kind = ParamKind::boolean;
  static bool read(const json& v) { return v.get<bool>(); }
  static json write(bool v) { return v; }
};
template <> struct FieldValue<std::string> {
  static constexpr ParamKind kind = ParamKind::string;
  static std::string read(const json& v) { return v.get<std::string>(); }
  static json write(const std::string& v) { return v; }
};
template <> struct FieldValue<std::array<int, 2>> {
  static constexpr ParamKind kind = ParamKind::int_pair;
  static std::array<int, 2> read(const json& v) {
    return v.is_array() ? std::array<int, 2>{v[0].get<int>(), v[1].get<int>()} : std::array<int, 2>{v.get<int>(), v.get<int>()};
  }
  static json write(const std::array<int, 2>& v) { return v[0] == v[1] ? json(v[0]) : json::array({v[0], v[1]}); }
};
template <> struct FieldValue<std::array<bool, 2>> {
  static constexpr ParamKind kind = ParamKind::bool_pair;
  static std::array<bool, 2> read(const json& v) {
    return v.is_array() ? std::array<bool, 2>{v[0].get<bool>(), v[1].get<bool>()} : std::array<bool, 2>{v.get<bool>(), v.get<bool>()};
  }
  static json write(const std::array<bool, 2>& v) { return v[0] == v[1] ? json(v[0]) : json::array({v[0], v[1]}); }
};
template <> struct FieldValue<std::array<double, 2>> {
  static constexpr ParamKind kind = ParamKind::number_pair;
  static std::array<double, 2> read(const json& v) { return {v[0].get<double>(), v[1].get<double>()}; }
  static json write(const std::array<double, 2>& v) { return json::array({v[0], v[1]}); }
};
template <> struct FieldValue<AutoPair> {
  static constexpr ParamKind kind = ParamKind::int_pair_or_auto;
  static AutoPair read(const json& v) {
    if (v == "auto") return {};
    return {FieldValue<std::array<int, 2>>::read(v)};
  }
  static json write(const AutoPair& v) { return v.size ? FieldValue<std::array<int, 2>>::write(*v.size) : json("auto"); }
};

// The declaration of one parameter of member type M. Without `default_value`
// the parameter is required. An enum member is a string parameter: `named`
// gives each of its names with the value it stands for (its choices); so
// does any member with `named` (a bool named by two words).
template <class M> struct FieldOptions {
  std::string name;
  std::string help = {};
  std::optional<M> default_value = std::nullopt;
  std::optional<double> minimum = std::nullopt;  // inclusive, or exclusive with exclusive_minimum
  bool exclusive_minimum = false;
  std::optional<double> maximum = std::nullopt;  // inclusive; integers default to 2^31 - 1, pairs to 2^24
  std::vector<std::pair<std::string, M>> named = {};
  std::vector<std::string> choices = {};         // a plain string parameter's allowed values
};

// The `named` values of an enum parameter, each under its to_string name.
template <class E>
  requires std::is_enum_v<E>
std::vector<std::pair<std::string, E>> by_name(std::initializer_list<E> values) {
  std::vector<std::pair<std::string, E>> out;
  for (const E v : values) out.emplace_back(to_string(v), v);
  return out;
}

namespace detail {

template <class M> ParamSpec spec_of(const FieldOptions<M>& o) {
  ParamSpec spec{.name = o.name, .help = o.help, .minimum = o.minimum, .exclusive_minimum = o.exclusive_minimum,
                 .maximum = o.maximum};
  const auto by_names = [&] {
    spec.kind = ParamKind::string;
    for (const auto& [name, value] : o.named) spec.choices.push_back(name);
    if (o.default_value)
      for (const auto& [name, value] : o.named)
        if (value == *o.default_value) spec.default_value = name;
  };
  if constexpr (std::is_enum_v<M>) {
    by_names();
  } else if (!o.named.empty()) {
    by_names();
  } else {
    spec.kind = FieldValue<M>::kind;
    spec.choices = o.choices;
    if (o.default_value) spec.default_value = FieldValue<M>::write(*o.default_value);
  }
  return spec;
}

template <class M> M value_of(const FieldOptions<M>& o, const json& v) {
  for (const auto& [name, value] : o.named)
    if (v == name) return value;
  if constexpr (std::is_enum_v<M>) throw ParamError(o.name, "unknown value " + v.dump());  // the choices are checked first
  else return FieldValue<M>::read(v);
}

}  // namespace detail

// One parameter read into p.*member.
template <class P, class M> Field<P> field(M P::*member, FieldOptions<std::type_identity_t<M>> options) {
  ParamSpec spec = detail::spec_of(options);
  return {{std::move(spec)}, [member, options](const json& params, P& p) {
            p.*member = detail::value_of(options, params.at(options.name));
          }};
}

// One parameter read into (p.*outer).*inner: a member of a member struct.
template <class P, class S, class M>
Field<P> field(S P::*outer, M S::*inner, FieldOptions<std::type_identity_t<M>> options) {
  ParamSpec spec = detail::spec_of(options);
  return {{std::move(spec)}, [outer, inner, options](const json& params, P& p) {
            (p.*outer).*inner = detail::value_of(options, params.at(options.name));
          }};
}

// Several fields declared as one (a shared declaration of several keys).
template <class P> Field<P> group(std::vector<Field<P>> fields) {
  Field<P> out;
  for (const Field<P>& f : fields) out.specs.insert(out.specs.end(), f.specs.begin(), f.specs.end());
  out.read = [fields = std::move(fields)](const json& params, P& p) {
    for (const Field<P>& f : fields) f.read(params, p);
  };
  return out;
}

// A group of fields of a member struct S (shared declarations: the convolution's
// shape, its geometry) lifted to the proof's P.
template <class P, class S> Field<P> nested(S P::*member, Field<S> group) {
  return {std::move(group.specs), [member, read = std::move(group.read)](const json& params, P& p) {
            read(params, p.*member);
          }};
}

// A field of a base class B of P, as a field of P.
template <class P, class B>
  requires std::is_base_of_v<B, P>
Field<P> inherited(Field<B> f) {
  if constexpr (std::is_same_v<P, B>) return f;
  else return {std::move(f.specs), [read = std::move(f.read)](const json& params, P& p) { read(params, p); }};
}

// The fields of P, in order, from fields and lists of fields of P or of its
// base classes (shared declarations, then the proof's own).
template <class P, class... Parts> std::vector<Field<P>> fields(Parts... parts) {
  std::vector<Field<P>> out;
  const auto add = [&out](auto&& part) {
    if constexpr (requires { part.specs; }) out.push_back(inherited<P>(std::move(part)));
    else for (auto& f : part) out.push_back(inherited<P>(std::move(f)));
  };
  (add(std::move(parts)), ...);
  return out;
}

}  // namespace attnconv
