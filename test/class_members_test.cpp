// No class under models/, kernels/ or tools/ holds more than 15 non-static data members (issue 23): one that
// grows past it groups related fields into named records. The counter (test/support/class_members.h) is held
// to known counts on small sources first, the tricky declarations among them.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "support/class_members.h"

namespace {

using tpusim::testing::class_members;
using tpusim::testing::ClassMembers;

constexpr int kMaxDataMembers = 15;

// The count of the one class named `name` in `source` (-1 when there is not exactly one).
int members_of(std::string_view source, std::string_view name) {
  int found = -1;
  int matches = 0;
  for (const ClassMembers& c : class_members(source)) {
    if (c.name == name) {
      found = c.data_members;
      ++matches;
    }
  }
  return matches == 1 ? found : -1;
}

TEST(ClassMembers, CheckerCountsEachDeclarator) {
  EXPECT_EQ(members_of("struct A { int a, b; double c; };", "A"), 3);
  EXPECT_EQ(members_of("class A { public: int a; private: int b_; protected: int c; };", "A"), 3);
  // Default member initializers with braces, commas and parentheses inside.
  EXPECT_EQ(members_of("struct A { std::array<int, 3> a{1, 2, 3}, b = {4, 5, 6}; int c = f(1, 2); };", "A"), 3);
  EXPECT_EQ(members_of("struct A { std::vector<int> v{}; std::pair<int, int> p = {1, 2}; bool c = x < y; };", "A"),
            3);
  // Template arguments with commas, nested ones closing as `>>`, a function type inside.
  EXPECT_EQ(members_of("struct A { std::map<int, int> m; std::map<int, std::vector<int>> n, o; };", "A"), 3);
  EXPECT_EQ(members_of("struct A { std::function<void(int, int)> f; std::array<Tick, kN> t{}; };", "A"), 2);
  // Bit-fields.
  EXPECT_EQ(members_of("struct A { unsigned a : 3, b : 5; unsigned c : 1 = 0; };", "A"), 3);
  // A nested struct counts for itself; one with declarators adds them; an anonymous union adds its members.
  const std::string_view nested = "struct A { struct B { int x, y, z; }; B b; struct { int p; } q, r; "
                                  "union { int i; float f; }; enum class E { e1, e2, e3 }; E e; enum F { f1 } f; };";
  EXPECT_EQ(members_of(nested, "A"), 7);
  EXPECT_EQ(members_of(nested, "A::B"), 3);
  // Member functions: declared, defined, constructors with member initializers, operators, `= default`,
  // `= delete`, pure virtual, conversion, templates, a trailing return type.
  const std::string_view functions =
      "class A {\n"
      " public:\n"
      "  A() : a_(1), b_{2, 3} {}\n"
      "  explicit A(int x);\n"
      "  ~A() = default;\n"
      "  A(const A&) = delete;\n"
      "  virtual void f() const = 0;\n"
      "  int g(int x = 1, int y = T{2}) const;\n"
      "  [[nodiscard]] int h() const { return a_ + b_[0]; }\n"
      "  bool operator<(const A& o) const;\n"
      "  A& operator=(const A&) = default;\n"
      "  int operator()(int, int) const { return 0; }\n"
      "  explicit operator bool() const { return true; }\n"
      "  bool operator==(const A&) const = default;\n"
      "  template <class T, class U> T conv(U u) { return T(u); }\n"
      "  auto t() -> std::vector<int>;\n"
      " private:\n"
      "  int a_;\n"
      "  std::array<int, 2> b_;\n"
      "};";
  EXPECT_EQ(members_of(functions, "A"), 2);
  // Lambdas in initializers: their parameters and bodies declare nothing.
  EXPECT_EQ(members_of("struct A { std::function<int(int, int)> f = [](int a, int b) { int c = a; return c + b; };"
                       " int n = [] { int x = 1, y = 2; return x + y; }(); };",
                       "A"),
            2);
  // Static members, types, aliases, friends and assertions are not data members; pointers to functions are.
  EXPECT_EQ(members_of("struct A { static int s; static constexpr int k = 3, l = 4; inline static int m = 0;"
                       " using T = std::map<int, int>; typedef int U; friend class B; friend bool operator==(A, A) {"
                       " return true; } static_assert(sizeof(int) == 4, \"int\"); struct C; void (*fp)(int, int);"
                       " int (A::*mp)(int) const; decltype(k) d; };",
                       "A"),
            3);
  // Comments, strings, raw strings, characters, digit separators and preprocessor lines hide nothing.
  EXPECT_EQ(members_of("struct A {\n  // int hidden;\n  /* int b; */ int a = 1'000'000;\n  char c = '}';\n"
                       "  const char* s = \"; int t;\";\n  const char* r = R\"x(}; int u;)x\";\n#define X struct { \\\n"
                       "  int w; }\n  int v;\n};",
                       "A"),
            5);
  // Nested classes named by their enclosing one; local classes in function bodies found too.
  const std::vector<ClassMembers> all =
      class_members("namespace n {\nstruct Outer {\n  struct Inner { int a; };\n  int b;\n};\n"
                    "template <class T> class Box final : public Base<T, int> { T t; };\n"
                    "enum class Kind { a, b };\nvoid f() { struct Local { int x, y; } l; }\n}");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].name, "Outer");
  EXPECT_EQ(all[0].line, 2);
  EXPECT_EQ(all[0].data_members, 1);
  EXPECT_EQ(all[1].name, "Outer::Inner");
  EXPECT_EQ(all[1].data_members, 1);
  EXPECT_EQ(all[2].name, "Box");
  EXPECT_EQ(all[2].data_members, 1);
  EXPECT_EQ(all[3].name, "Local");
  EXPECT_EQ(all[3].data_members, 2);
}

TEST(ClassMembers, NoClassOver15DataMembersInModelsKernelsTools) {
  namespace fs = std::filesystem;
  const fs::path root = TPUSIM_SOURCE_DIR;
  std::size_t files = 0;
  for (const char* layer : {"models", "kernels", "tools"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / layer)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      ++files;
      for (const ClassMembers& c : class_members(text)) {
        EXPECT_LE(c.data_members, kMaxDataMembers)
            << fs::relative(entry.path(), root).generic_string() << ":" << c.line << ": " << c.name << " has "
            << c.data_members << " data members (at most " << kMaxDataMembers
            << "): group related fields into named records";
      }
    }
  }
  EXPECT_GT(files, 100u);  // the tree was found
}

}  // namespace
