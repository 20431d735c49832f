// FieldTable: one declaration per parameter drives parsing with strict keys. Every problem in a tree (unknown
// key with a did-you-mean, missing required key, wrong type, wrong unit, failed constraint) is collected, each
// naming its file:line:column and dotted key path, before anything is used.
#include "tpusim/core/chip_spec.h"
#include "tpusim/core/fields.h"
#include "tpusim/core/model_spec.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tpusim {
namespace {

struct Demo {
  std::string name;
  int count = 0;
  Bytes size;
  BytesPerSecond bandwidth;
  Seconds latency;
  double efficiency = 0;
  std::vector<int> shape;
  bool enabled = false;
};

const FieldTable<Demo>& demo_fields() {
  using S = Demo;
  static const FieldTable<Demo> table = [] {
    FieldTable<Demo> t;
    t.add<std::string>("name", [](S& s) -> std::string& { return s.name; }, std::nullopt, "demo name");
    t.add<int>("count", [](S& s) -> int& { return s.count; }, std::nullopt, "how many", at_least(1));
    t.add<Bytes>("mem.size", [](S& s) -> Bytes& { return s.size; }, std::nullopt, "memory size",
                 positive<Bytes>());
    t.add<BytesPerSecond>("mem.bandwidth", [](S& s) -> BytesPerSecond& { return s.bandwidth; }, std::nullopt,
                          "memory bandwidth", positive<BytesPerSecond>());
    t.add<Seconds>("mem.latency", [](S& s) -> Seconds& { return s.latency; }, "1 us", "memory latency",
                   non_negative<Seconds>());
    t.add<double>("efficiency", [](S& s) -> double& { return s.efficiency; }, "0.9", "achievable fraction",
                  fraction());
    t.add<std::vector<int>>("shape", [](S& s) -> std::vector<int>& { return s.shape; }, std::nullopt,
                            "axes", positive_list(1, 3));
    t.add<bool>("enabled", [](S& s) -> bool& { return s.enabled; }, "false", "switch");
    return t;
  }();
  return table;
}

constexpr std::string_view kValid =
    "name: d          # source A\n"
    "count: 2\n"
    "mem:\n"
    "  size: 16 MiB\n"
    "  bandwidth: 1200 GB/s\n"
    "shape: [4, 4, 4]\n";

struct Resolved {
  Demo spec;
  Diagnostics diags;
  std::map<std::string, FieldOrigin> origins;
};

Resolved resolve(std::string_view text, const std::string& path = "demo") {
  Resolved r;
  const ConfigNode root = load_yaml_string(text, "demo.yaml", r.diags);
  EXPECT_TRUE(r.diags.empty()) << "the YAML itself should load: " << r.diags.str();
  demo_fields().resolve(root, path, r.spec, r.diags, &r.origins);
  return r;
}

const Diagnostic* find_diag(const Diagnostics& diags, const std::string& key_path) {
  for (const auto& d : diags.items()) {
    if (d.key_path == key_path) return &d;
  }
  return nullptr;
}

TEST(FieldTable, ResolvesTypedValuesAndAppliesDefaults) {
  const Resolved r = resolve(kValid);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.spec.name, "d");
  EXPECT_EQ(r.spec.count, 2);
  EXPECT_EQ(r.spec.size, MiB(16));
  EXPECT_EQ(r.spec.bandwidth.value(), 1.2e12);
  EXPECT_EQ(r.spec.latency.value(), 1e-6);
  EXPECT_EQ(r.spec.efficiency, 0.9);
  EXPECT_EQ(r.spec.shape, (std::vector<int>{4, 4, 4}));
  EXPECT_FALSE(r.spec.enabled);
}

TEST(FieldTable, RecordsTheOriginAndSourceCommentOfEachField) {
  const Resolved r = resolve(kValid);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  const FieldOrigin& name = r.origins.at("name");
  EXPECT_FALSE(name.defaulted);
  EXPECT_EQ(name.comment, "source A");
  EXPECT_EQ(name.loc.str(), "demo.yaml:1:7");
  EXPECT_EQ(r.origins.at("mem.size").loc.line, 4);
  EXPECT_TRUE(r.origins.at("mem.latency").defaulted);
  EXPECT_TRUE(r.origins.at("efficiency").defaulted);
  EXPECT_EQ(r.origins.size(), 8u);
}

TEST(FieldTable, UnknownTopLevelKeySuggestsTheClosestKey) {
  const Resolved r = resolve(std::string(kValid) + "cuont: 3\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  const Diagnostic& d = r.diags.items()[0];
  EXPECT_EQ(d.key_path, "demo.cuont");
  EXPECT_EQ(d.message, "unknown key 'cuont'");
  EXPECT_NE(d.hint.find("'count'"), std::string::npos) << d.hint;
  EXPECT_EQ(d.loc.line, 7);
  EXPECT_EQ(d.loc.column, 1);
}

TEST(FieldTable, UnknownNestedKeySuggestsASiblingInItsSection) {
  const Resolved r = resolve(
      "name: d\ncount: 2\nshape: [1]\nmem:\n  size: 16 MiB\n  bandwidth: 1 GB/s\n  latncy: 2 us\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  const Diagnostic& d = r.diags.items()[0];
  EXPECT_EQ(d.key_path, "demo.mem.latncy");
  EXPECT_EQ(d.hint, "did you mean 'latency'?");
  EXPECT_EQ(d.loc.str(), "demo.yaml:7:3");
}

TEST(FieldTable, UnrelatedUnknownKeyListsTheValidKeys) {
  const Resolved r = resolve(std::string(kValid) + "zzzzzzzzzzzz: 1\n");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags.items()[0].hint, "expected one of: name, count, mem, efficiency, shape, enabled");
}

TEST(FieldTable, MissingRequiredKeyNamesItsFullPath) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: 16 MiB\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  const Diagnostic& d = r.diags.items()[0];
  EXPECT_EQ(d.key_path, "demo.mem.bandwidth");
  EXPECT_EQ(d.message, "missing required key");
  EXPECT_EQ(d.expected, "bandwidth (memory bandwidth)");
  EXPECT_EQ(d.found, "nothing");
  EXPECT_EQ(d.loc.line, 5);  // the 'mem' map it belongs in, which starts on the size line
}

TEST(FieldTable, KeyWithAnEmptyValueCountsAsMissing) {
  const Resolved r = resolve(std::string(kValid).replace(0, 7, "name:  "));
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].key_path, "demo.name");
  EXPECT_EQ(r.diags.items()[0].message, "missing required key");
}

TEST(FieldTable, AnOptionalKeyWithAnEmptyValueIsAnErrorNotItsDefault) {
  // `efficiency:` and `efficiency: ~` say nothing: leaving the key out is how a file asks for the default 0.9.
  for (const char* empty : {"efficiency:\n", "efficiency: ~\n", "efficiency: null\n"}) {
    const Resolved r = resolve(std::string(kValid) + empty);
    ASSERT_EQ(r.diags.size(), 1u) << empty << r.diags.str();
    const Diagnostic& d = r.diags.items()[0];
    EXPECT_EQ(d.key_path, "demo.efficiency");
    EXPECT_EQ(d.message, "empty value");
    EXPECT_EQ(d.found, "nothing (an empty value)");
    EXPECT_EQ(d.hint, "leave the key out for its default (0.9)");
    EXPECT_EQ(d.loc.line, 7);
  }
}

TEST(FieldTable, WithoutAPathPrefixKeyPathsAreRelative) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: 16 MiB\n", "");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags.items()[0].key_path, "mem.bandwidth");
}

TEST(FieldTable, SizeWhereABandwidthIsExpectedIsRejectedNamingBothDimensions) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: 16 MiB\n  bandwidth: 100 GB\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  const Diagnostic& d = r.diags.items()[0];
  EXPECT_EQ(d.key_path, "demo.mem.bandwidth");
  EXPECT_EQ(d.message, "invalid value");
  EXPECT_EQ(d.found, "'100 GB'");
  EXPECT_NE(d.expected.find("a bandwidth with a unit, e.g. '1200 GB/s'"), std::string::npos) << d.expected;
  EXPECT_NE(d.expected.find("'100 GB' is a size"), std::string::npos) << d.expected;
  EXPECT_EQ(d.loc.str(), "demo.yaml:6:14");
}

TEST(FieldTable, BareNumberWhereAQuantityIsExpectedSaysItLacksAUnit) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: 16777216\n  bandwidth: 1 GB/s\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].key_path, "demo.mem.size");
  EXPECT_NE(r.diags.items()[0].expected.find("a bare number has no unit"), std::string::npos);
}

TEST(FieldTable, WrongTypeIsReportedWithWhatWasFound) {
  const Resolved r = resolve("name: d\ncount: [1, 2]\nshape: 4\nmem:\n  size: 1 MiB\n  bandwidth: 1 GB/s\n");
  ASSERT_EQ(r.diags.size(), 2u) << r.diags.str();
  const Diagnostic* count = find_diag(r.diags, "demo.count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->message, "wrong type");
  EXPECT_EQ(count->expected, "an integer");
  EXPECT_EQ(count->found, "a list");
  const Diagnostic* shape = find_diag(r.diags, "demo.shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->message, "invalid value");
  EXPECT_EQ(shape->expected, "a list of integers, e.g. [4, 4, 4]");
}

TEST(FieldTable, AListOfIntegersWithAnEntryOfAnotherTypeNamesTheEntry) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [4, true, 4]\nmem:\n  size: 1 MiB\n  bandwidth: 1 GB/s\n");
  const Diagnostic* shape = find_diag(r.diags, "demo.shape");
  ASSERT_NE(shape, nullptr) << r.diags.str();
  EXPECT_EQ(shape->expected, "a list of integers, each from -2147483648 to 2147483647; entry 1 is 'true'");
}

TEST(FieldTable, ASectionGivenAsAScalarIsAWrongType) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem: 5\n");
  const Diagnostic* mem = find_diag(r.diags, "demo.mem");
  ASSERT_NE(mem, nullptr) << r.diags.str();
  EXPECT_EQ(mem->message, "wrong type");
  EXPECT_EQ(mem->expected, "a map (a section of fields)");
}

// `mem:` with no value is not an empty section that takes its defaults (leaving the key out does that): a
// section's value is a map, and nothing is not one, as `job:` at the top of a scenario is refused.
TEST(FieldTable, ASectionWithNoValueIsAWrongTypeNotItsDefaults) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n");
  const Diagnostic* mem = find_diag(r.diags, "demo.mem");
  ASSERT_NE(mem, nullptr) << r.diags.str();
  EXPECT_EQ(mem->message, "wrong type");
  EXPECT_EQ(mem->expected, "a map (a section of fields)");
  EXPECT_EQ(mem->found, "nothing (an empty value)");
  EXPECT_EQ(mem->loc.line, 4);
}

TEST(FieldTable, ZeroSizeIsRejected) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: 0 MiB\n  bandwidth: 1 GB/s\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].key_path, "demo.mem.size");
  EXPECT_EQ(r.diags.items()[0].expected, "a value greater than zero");
}

TEST(FieldTable, NegativeSizeIsRejected) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: -1 MiB\n  bandwidth: 1 GB/s\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].key_path, "demo.mem.size");
  EXPECT_EQ(r.diags.items()[0].expected, "a whole, non-negative number of bytes");
}

TEST(FieldTable, FractionalByteCountIsRejected) {
  const Resolved r = resolve("name: d\ncount: 2\nshape: [1]\nmem:\n  size: 0.5 B\n  bandwidth: 1 GB/s\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].expected, "a whole, non-negative number of bytes");
}

TEST(ParseScalar, ByteCountBeyond64BitsIsRejected) {
  const ConfigNode n = ConfigNode::make_scalar("2e19 B", SourceLoc{"x.yaml", 1, 1});
  Bytes out;
  std::string expected;
  EXPECT_FALSE(parse_scalar(n, out, expected));
}

TEST(FieldTable, ZeroOrNegativeBandwidthAndCountAreRejected) {
  const Resolved r = resolve("name: d\ncount: 0\nshape: [1]\nmem:\n  size: 1 MiB\n  bandwidth: -5 GB/s\n");
  ASSERT_EQ(r.diags.size(), 2u) << r.diags.str();
  EXPECT_EQ(find_diag(r.diags, "demo.count")->expected, "an integer >= 1");
  EXPECT_EQ(find_diag(r.diags, "demo.mem.bandwidth")->expected, "a value greater than zero");
}

TEST(FieldTable, FractionOutsideZeroToOneIsRejected) {
  const Resolved r = resolve(std::string(kValid) + "efficiency: 1.5\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].expected, "a fraction in (0, 1]");
}

TEST(FieldTable, ListOutsideItsLengthOrWithZeroIsRejected) {
  const Resolved too_long = resolve(std::string(kValid).replace(kValid.find("[4, 4, 4]"), 9, "[1, 2, 3, 4]"));
  ASSERT_EQ(too_long.diags.size(), 1u) << too_long.diags.str();
  EXPECT_EQ(too_long.diags.items()[0].expected, "a list of 1 to 3 integers, each >= 1; it has 4");
  const Resolved zero = resolve(std::string(kValid).replace(kValid.find("[4, 4, 4]"), 9, "[4, 0]"));
  ASSERT_EQ(zero.diags.size(), 1u) << zero.diags.str();
  EXPECT_EQ(zero.diags.items()[0].expected, "a list of 1 to 3 integers, each >= 1; entry 1 is 0");
}

TEST(FieldTable, BooleanAcceptsOnlyTrueOrFalse) {
  const Resolved r = resolve(std::string(kValid) + "enabled: yes\n");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags.items()[0].expected, "true or false");
}

TEST(FieldTable, ReportsEveryErrorAtOnce) {
  // Five problems: an unknown key, a missing required key, a wrong unit, a failed constraint, a wrong type.
  const Resolved r = resolve(
      "name: d\n"
      "count: 0\n"
      "colour: red\n"
      "shape: 4\n"
      "mem:\n"
      "  size: 100 GB/s\n");
  EXPECT_EQ(r.diags.size(), 5u) << r.diags.str();
  EXPECT_NE(find_diag(r.diags, "demo.colour"), nullptr);
  EXPECT_NE(find_diag(r.diags, "demo.count"), nullptr);
  EXPECT_NE(find_diag(r.diags, "demo.shape"), nullptr);
  EXPECT_NE(find_diag(r.diags, "demo.mem.size"), nullptr);
  EXPECT_NE(find_diag(r.diags, "demo.mem.bandwidth"), nullptr);
}

TEST(FieldTable, NonMapRootIsAWrongType) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string("[1, 2]", "demo.yaml", diags);
  Demo spec;
  demo_fields().resolve(root, "demo", spec, diags);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].message, "wrong type");
  EXPECT_EQ(diags.items()[0].found, "a list");
}

TEST(FieldTable, IgnoredSectionsAreLeftForSomeoneElse) {
  Resolved r;
  const ConfigNode root = load_yaml_string(std::string(kValid) + "workload:\n  batch: 8\n", "demo.yaml", r.diags);
  demo_fields().resolve(root, "", r.spec, r.diags, nullptr, {"workload"});
  EXPECT_TRUE(r.diags.empty()) << r.diags.str();
}

TEST(FieldTable, RenderShowsEveryFieldWithItsUnitInDeclarationOrder) {
  const Resolved r = resolve(kValid);
  const auto rows = demo_fields().render(r.spec);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0], (std::pair<std::string, std::string>{"name", "d"}));
  EXPECT_EQ(rows[2], (std::pair<std::string, std::string>{"mem.size", "16 MiB"}));
  EXPECT_EQ(rows[3], (std::pair<std::string, std::string>{"mem.bandwidth", "1.2 TB/s"}));
  EXPECT_EQ(rows[4], (std::pair<std::string, std::string>{"mem.latency", "1 us"}));
  EXPECT_EQ(rows[6], (std::pair<std::string, std::string>{"shape", "[4, 4, 4]"}));
}

TEST(FieldTable, InfosDescribeKindDefaultAndDoc) {
  const auto infos = demo_fields().infos();
  ASSERT_EQ(infos.size(), 8u);
  EXPECT_EQ(infos[3].key, "mem.bandwidth");
  EXPECT_EQ(infos[3].kind, "bandwidth");
  EXPECT_FALSE(infos[3].default_text.has_value());
  EXPECT_EQ(infos[4].kind, "duration");
  EXPECT_EQ(infos[4].default_text, std::optional<std::string>("1 us"));
}

// A list-valued field with a default ("[]") must resolve when the key is absent; pod_fields() declares `cube`
// that way and the bundled sub-cube pods rely on it.
TEST(FieldTable, ListFieldTakesItsDefaultWhenAbsent) {
  struct L {
    std::vector<int> cube{9};
  };
  FieldTable<L> t;
  t.add<std::vector<int>>("cube", [](L& s) -> std::vector<int>& { return s.cube; }, "[]", "optional list");
  Diagnostics diags;
  const ConfigNode root = ConfigNode::make_map(SourceLoc{"x.yaml", 1, 1});
  L spec;
  t.resolve(root, "", spec, diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  EXPECT_TRUE(spec.cube.empty());
}

// A list of choices (workload.async_collectives): names from the choices, each at most once, kept and shown in
// the choices' order whatever order the YAML lists them in; [] is an empty list, not the default.
struct Kinds {
  std::vector<CollectiveKind> kinds = all_collective_kinds();
};

const FieldTable<Kinds>& kinds_fields() {
  static const FieldTable<Kinds> table = [] {
    FieldTable<Kinds> t;
    t.add_choice_list<CollectiveKind>(
        "kinds", [](Kinds& s) -> std::vector<CollectiveKind>& { return s.kinds; }, collective_choices(),
        "[all_reduce, reduce_scatter, all_gather, all_to_all, permute]", "collective kinds");
    return t;
  }();
  return table;
}

struct ResolvedKinds {
  Kinds spec;
  Diagnostics diags;
};

ResolvedKinds resolve_kinds(std::string_view text) {
  ResolvedKinds r;
  const ConfigNode root = load_yaml_string(text, "k.yaml", r.diags);
  EXPECT_TRUE(r.diags.empty()) << r.diags.str();
  kinds_fields().resolve(root, "w", r.spec, r.diags);
  return r;
}

TEST(FieldTable, ChoiceListKeepsTheChoicesOrderAndShowsTheNames) {
  const ResolvedKinds r = resolve_kinds("kinds: [permute, all_reduce]\n");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.spec.kinds, (std::vector<CollectiveKind>{CollectiveKind::all_reduce, CollectiveKind::permute}));
  const auto shown = kinds_fields().render(r.spec);
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].second, "[all_reduce, permute]");
}

TEST(FieldTable, ChoiceListDefaultsToItsDefaultTextAndAnEmptyListMeansNone) {
  const ResolvedKinds absent = resolve_kinds("{}\n");
  ASSERT_TRUE(absent.diags.empty()) << absent.diags.str();
  EXPECT_EQ(absent.spec.kinds, all_collective_kinds());
  const ResolvedKinds empty = resolve_kinds("kinds: []\n");
  ASSERT_TRUE(empty.diags.empty()) << empty.diags.str();
  EXPECT_TRUE(empty.spec.kinds.empty());
  EXPECT_EQ(kinds_fields().render(empty.spec)[0].second, "[]");
}

TEST(FieldTable, ChoiceListRefusesAnUnknownNameWithADidYouMean) {
  const ResolvedKinds r = resolve_kinds("kinds: [all_reduce, reduce_scater]\n");
  ASSERT_EQ(r.diags.size(), 1u) << r.diags.str();
  const Diagnostic& d = r.diags.items()[0];
  EXPECT_EQ(d.key_path, "w.kinds");
  EXPECT_EQ(d.message, "invalid value");
  EXPECT_EQ(d.expected, "each one of the choices, not 'reduce_scater'; did you mean 'reduce_scatter'?");
}

TEST(FieldTable, ChoiceListRefusesANameListedTwiceAndAScalar) {
  const ResolvedKinds twice = resolve_kinds("kinds: [permute, all_gather, permute]\n");
  ASSERT_EQ(twice.diags.size(), 1u) << twice.diags.str();
  EXPECT_EQ(twice.diags.items()[0].message, "invalid value");
  EXPECT_EQ(twice.diags.items()[0].expected, "each choice at most once ('permute' is listed twice)");
  const ResolvedKinds scalar = resolve_kinds("kinds: permute\n");
  ASSERT_EQ(scalar.diags.size(), 1u) << scalar.diags.str();
  EXPECT_EQ(scalar.diags.items()[0].message, "invalid value");
  EXPECT_EQ(scalar.diags.items()[0].expected, "a list, e.g. [all_reduce]");
}

TEST(ChipFields, EveryKeyIsDeclaredOnceWithADoc) {
  const auto infos = chip_fields().infos();
  std::vector<std::string> keys;
  for (const auto& i : infos) {
    EXPECT_FALSE(i.doc.empty()) << i.key;
    keys.push_back(i.key);
  }
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

}  // namespace
}  // namespace tpusim
